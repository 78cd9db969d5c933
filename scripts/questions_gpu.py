"""The reasoning questions' GPU check (the ``questions`` stage of ``bench/gpu_gate.py``, run by
``scripts/gpu-check.sh``; about a minute): what only a real GPU can confirm.

- exec-output: a sample of C++ questions (references and mutants) built with nvcc, each the
  question's kernel and a driver making the question's call (:mod:`cudaenv.questions.driver`);
  what it prints must equal the stored answer;
- race: C++ race items (barrier removed, and references) run under
  ``compute-sanitizer --tool racecheck``: hazards reported exactly where the item says there
  is a race.

Rows go to ``OUT/gate/questions.jsonl`` as items finish; ``OUT/questions_gpu_checked.json``
lists the (family, mutant) pairs and race items that agreed, in the format of
``cudaenv/questions/data/gpu_checked.json``: copying it there (after reading the rows) is what
lets those C++ questions ship as verified.

    python scripts/questions_gpu.py --out DIR [--exec 6] [--races 4] [--budget-s 50]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaenv.questions import adapter, driver
from cudaenv.questions.generate import generate_questions
from cudaenv.questions.kinds_code import case_from_record
from cudaenv.questions.model import Question
from cudaenv.toolkit import gpu_info, has_gpu

CPP = ["reduce-axis", "elementwise", "scan", "stencil", "permute", "matmul", "indexing", "rownorm"]
_HAZARDS = re.compile(r"RACECHECK SUMMARY: (\d+) hazard")


def _files(q: Question, workdir: Path) -> None:
    """The question's kernel, its headers and a driver for its call, under ``workdir``."""
    r = adapter.render(q.family or "", q.metadata["params"])
    if q.kind == "race":
        main = driver.main_source(
            r, driver.race_case(r), r.header, print_output=False, synthetic=True
        )
    else:
        main = driver.main_source(r, case_from_record(q.metadata["case"]), r.header)
    for path, text in {
        **r.headers,
        "solution.cu": r.variant(q.variant).source,
        "main.cu": main,
    }.items():
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).write_text(text)


def check(q: Question, deadline: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": q.task_id,
        "kind": q.kind,
        "family": q.family,
        "variant": q.variant,
    }
    if time.monotonic() > deadline:
        return {**row, "ok": None, "why": "not started: budget spent"}
    with tempfile.TemporaryDirectory(prefix="questions-gpu-") as tmp:
        root = Path(tmp)
        _files(q, root)
        build = subprocess.run(["nvcc", "-O2", "-arch=native", "-I", "include", "-o", "run", "solution.cu", "main.cu"],
                               cwd=root, capture_output=True, text=True, timeout=300)  # fmt: skip
        if build.returncode != 0:
            return {**row, "ok": False, "why": f"build failed: {build.stderr[-500:]}"}
        if q.kind == "race":
            run = subprocess.run(["compute-sanitizer", "--tool", "racecheck", "--racecheck-report", "hazard", "./run"],
                                 cwd=root, capture_output=True, text=True, timeout=300)  # fmt: skip
            found = _HAZARDS.search(run.stdout + run.stderr)
            hazards = int(found.group(1)) if found else None
            ok = hazards is not None and (hazards > 0) == bool(q.expected["race"])
            return {**row, "ok": ok, "hazards": hazards, "race": q.expected["race"]}
        run = subprocess.run(["./run"], cwd=root, capture_output=True, text=True, timeout=120)
        got = driver.parse_output(run.stdout)
        want = [float(v) for v in _flat(q.expected)]
        return {
            **row,
            "ok": run.returncode == 0 and got == want,
            "got": got if got != want else None,
        }


def _flat(v: Any) -> list[Any]:
    return [x for item in v for x in _flat(item)] if isinstance(v, list) else [v]


def sample(n_exec: int, n_races: int, seed: int) -> list[Question]:
    """C++ exec-output questions (mutants first: they are what needs confirming) and races."""
    execs = generate_questions(
        count=4 * n_exec, seed=seed, kinds=["exec-output"], families=CPP, unverified=True
    )
    mutants = [q for q in execs if q.variant != "reference"]
    refs = [q for q in execs if q.variant == "reference"]
    races = generate_questions(
        count=n_races, seed=seed, kinds=["race"], families=CPP, unverified=True
    )
    return (mutants[: n_exec - n_exec // 3] + refs[: n_exec // 3]) + races


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--exec", type=int, default=6, dest="n_exec")
    ap.add_argument("--races", type=int, default=4)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--budget-s", type=float, default=50.0)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args(argv)
    if not has_gpu() or shutil.which("nvcc") is None:
        sys.stderr.write("the questions' GPU check needs a GPU and nvcc\n")
        return 2
    deadline = time.monotonic() + max(0.0, args.budget_s - 20)  # the last builds must finish
    items = sample(args.n_exec, args.races, args.seed)
    (args.out / "gate").mkdir(parents=True, exist_ok=True)
    rows = []
    with (
        ThreadPoolExecutor(args.workers) as pool,
        (args.out / "gate" / "questions.jsonl").open("a") as fh,
    ):
        for row in pool.map(lambda q: check(q, deadline), items):
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            rows.append(row)
    info = gpu_info()
    agreed = [r for r in rows if r["ok"]]
    confirmed = {
        "generator_version": adapter.generator_version(),
        "gpu": getattr(info, "name", None),
        "note": f"scripts/questions_gpu.py on {time.strftime('%Y-%m-%d')}: {len(agreed)} of {len(rows)} items agreed",
        "mutants": sorted(
            {
                f"{r['family']}/{r['variant']}"
                for r in agreed
                if r["kind"] == "exec-output" and r["variant"] != "reference"
            }
        ),
        "races": sorted({f"{r['family']}/{r['variant']}" for r in agreed if r["kind"] == "race"}),
        "disagreed": [r for r in rows if r["ok"] is False],
    }
    (args.out / "questions_gpu_checked.json").write_text(json.dumps(confirmed, indent=1) + "\n")
    sys.stdout.write(
        json.dumps({k: confirmed[k] for k in ("gpu", "note", "mutants", "races")}) + "\n"
    )
    return 0 if rows and all(r["ok"] is not False for r in rows) and agreed else 1


if __name__ == "__main__":
    sys.exit(main())
