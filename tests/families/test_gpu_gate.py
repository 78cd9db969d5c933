"""The GPU gate of generated problems (issue 18), on a machine with a GPU: a seeded sample of
100 of the default set spanning every family; every reference and baseline passes, the
reference is not slower than the baseline beyond noise (validate's rule), and every mutant,
the races included, fails. The table (one line per problem) is printed, and written as JSON
to ``$OUT/families-gpu-gate.json`` when ``$OUT`` is set, each line also appended to
``$OUT/families-gpu-gate.jsonl`` as its problem finishes (partial results survive a kill).

The GPU gate (``bench/gpu_gate.py``, stage ``families``) runs a smaller sample within its
device budget: ``CUDAENV_FAMILIES_GPU_SAMPLE`` sets the sample size (default 100; the sample
is a prefix of the same seeded order, so families come first-seen, round-robin) and
``CUDAENV_FAMILIES_GPU_BUDGET_S`` stops starting problems after that many seconds (the ones
not started are listed as such; at least one must have run)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cudaenv.families import default_set, mutants, sample
from cudaenv.grading import grade
from cudaenv.grading.release_gate import validate_problem
from cudaenv.toolkit import has_gpu

SAMPLE = int(os.environ.get("CUDAENV_FAMILIES_GPU_SAMPLE", "100"))
BUDGET_S = float(os.environ.get("CUDAENV_FAMILIES_GPU_BUDGET_S", "inf"))


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="needs an NVIDIA GPU")
def test_generated_sample_on_the_gpu() -> None:
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    rows, bad, not_run = [], [], []
    deadline = time.monotonic() + BUDGET_S
    for p in sample(default_set(), SAMPLE, seed=100):
        if time.monotonic() > deadline:
            not_run.append(p.task_id)
            continue
        row = validate_problem(p, rounds=3)
        # validate grades the deterministic mutants; the races are graded here
        races = [m for m in mutants(p) if not m.deterministic]
        escaped = [m.name for m in races if grade(p, m.solution(p.task_id)).passed]
        line = {"task_id": p.task_id, "family": p.metadata.family, "ok": row.ok,
                "problem": row.problem, "speedup": row.speedup, "mutants_passed": escaped}  # fmt: skip
        rows.append(line)
        print(json.dumps(line))  # noqa: T201 - the table is this test's record
        if out is not None:
            with (out / "families-gpu-gate.jsonl").open("a") as fh:
                fh.write(json.dumps(line) + "\n")
        if not row.ok or escaped:
            bad.append(line)
    if not_run:
        print(json.dumps({"not_run_budget": not_run}))  # noqa: T201
    if out is not None:
        (out / "families-gpu-gate.json").write_text(json.dumps(rows, indent=1))
    assert rows, f"no problem ran within {BUDGET_S} s"
    assert not bad, bad
