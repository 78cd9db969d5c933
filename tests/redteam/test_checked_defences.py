"""Families 2 and 5 of issue 27 against their defences, on and off.

- ``py-host-operators-idle-kernel`` (cudaenv/redteam/catalog_checked.py): right answers
  computed on the host plus a do-nothing kernel. Only the profiler's judgement of each call
  (cudaenv.grading.gpu_work, on a GPU) stops it: where no profiler watches (numba-cuda's
  simulator, the defence off) it passes; on a GPU it fails as work not on the GPU.
- ``generated-py-guessed-seed``: a generated Python problem's answers worked out offline for
  seed 99; fresh seeds fail it, the seed fixed at the guess (the defence off) passes it.
- The generated matmul benchmark's outputs: every other entry of every timed call wrong. The
  checker compares a sample it draws after the run from the run's seed and fails it; the same
  checker with the old fixed stride put back (every 4096th entry, the defence off) passes it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cudaenv
from cudaenv.grading import checker as checker_module
from cudaenv.problems import load_suite
from cudaenv.redteam.catalog_checked import (
    GENERATED_TARGET,
    GUESSED_SEED,
    GUESSED_SOLUTION,
    HOST_OPERATORS,
    guessed_answers,
)
from cudaenv.redteam.runner import target_problem
from cudaenv.toolkit import has_gpu
from tests.families.test_checkers import Answered


@pytest.mark.skipif(has_gpu(), reason="the simulator's side: a GPU's profiler would judge it")
def test_host_operators_pass_where_no_profiler_watches(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = load_suite("builtin")["py-vector-add"]
    v = cudaenv.grade(problem, {"solution.py": HOST_OPERATORS}, test_cache=False)
    assert v.passed is True and v.suspected_hack == [], v  # right outputs, no name rule trips


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU visible (nvidia-smi found none)")
def test_on_a_gpu_host_operators_with_an_idle_kernel_fail() -> None:
    problem = load_suite("builtin")["py-vector-add"]
    v = cudaenv.grade(problem, {"solution.py": HOST_OPERATORS}, test_cache=False)
    assert v.passed is False and "work not on the GPU" in v.reason, v


FIXED_STRIDE = "picked = np.arange(0, count, 4096)[: self.sample]  # the old fixed stride"


def _odd_entries_wrong(case: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for k, a in arrays.items():
        a = a.copy()
        a[1 : a.size - 64 : 2] += np.float16(100)  # far outside the tolerance; the guard kept
        out[k] = a
    return out


def test_matmul_outputs_right_only_on_a_fixed_stride_fail_a_drawn_sample(tmp_path: Path) -> None:
    run = Answered("matmul", "perf", tmp_path / "run")
    out = run.mutated(tmp_path / "odd", _odd_entries_wrong)
    report = run.verify(out)
    assert not report["passed"] and all("sampled elements" in f for f in report["failures"])
    # the defence off: the same checker comparing a stride fixed in advance
    family_check = run.check.root / "check" / "family_check.py"
    text = family_check.read_text()
    drawn = next(ln for ln in text.splitlines() if "picked = np.sort(rng.choice(" in ln)
    family_check.write_text(text.replace(drawn.strip(), FIXED_STRIDE))
    off = run.verify(out)
    assert off["passed"], off["failures"]


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh-seed", "guessed-seed"])
def test_generated_answers_for_a_guessed_seed_fail_on_fresh_seeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    """The generated problem's answers worked out offline at seed 99: a fresh seed per run
    fails them; with the checker's seed fixed at the guess (the defence off) they pass."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = target_problem(GENERATED_TARGET)
    source = GUESSED_SOLUTION.format(table=repr(guessed_answers(problem)))
    if not fresh:
        monkeypatch.setattr(checker_module.secrets, "randbits", lambda bits: GUESSED_SEED)
    v = cudaenv.grade(problem, {"solution.py": source}, test_cache=False)
    assert v.passed is not fresh, v
    if fresh:
        assert "wrong outputs" in v.reason, v.reason
