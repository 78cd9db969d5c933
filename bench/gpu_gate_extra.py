"""The GPU gate's later stages (``redteam``, ``agreement``) and its tables (issue 32).

Apart from ``bench/gpu_gate.py`` so that each file keeps one job: the gate runs stages in
priority order; this holds the two that wrap whole commands, and prints what every stage left
under ``DIR`` as plain tables (the lines a device run's log tail shows).

- ``redteam``: ``cudaenv redteam`` on the GPU machine: every exploit through real episodes and
  the grader with its GPU stages live (benchmark, sanitizer); the table is the CLI's own, in
  ``DIR/gate/redteam.txt``; ok when the CLI exits 0 (every exploit rewarded 0).
- ``agreement``: ``bench/bench_computeeval_agreement.py`` on a ComputeEval-format corpus: the
  one staged in ``$GATE_CE_DIR`` (``problems.tar.gz`` and ``solutions.tar.gz``, carried to the
  device as an ignored path: the device cannot reach the network; ComputeEval's data is never
  committed), else our own fixtures (``tests/data/computeeval_groups``, their baselines).
  It needs ComputeEval's evaluator: ``COMPUTE_EVAL_PYTHON`` naming a venv with
  ``nvidia-compute-eval`` on the device (none there unless staged: the device has no package
  index); without it the stage is skipped, saying so (the library groups' own GPU tests run in
  ``gpu_tests``). Ok when both graders ran and no sample disagrees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLI = "import sys; from cudaenv.cli import main; sys.argv[0] = 'cudaenv'; sys.exit(main())"


def _run(cmd: list[str], cap: float, env: dict[str, str] | None = None) -> tuple[str, int | None]:
    try:
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=cap, env=env)
        return res.stdout + res.stderr, res.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return f"{out}\n[timed out after {cap:.0f} s]", None


def stage_redteam(gate: Any, cap: float) -> None:
    started = time.monotonic()
    out, rc = _run([sys.executable, "-c", CLI, "redteam"], cap)
    (gate.dir / "redteam.txt").write_text(out)
    tail = [ln for ln in out.splitlines() if ln.strip()][-1:] or [""]
    gate.finish("redteam", rc == 0, time.monotonic() - started, rc=rc, last=tail[0][:200])


def _fixture_corpus(work: Path) -> tuple[Path, Path]:
    """Our own ComputeEval-format fixtures as a problems pack and their baselines."""
    sys.path.insert(0, str(ROOT / "tests" / "grading"))
    sys.path.insert(0, str(ROOT / "bench"))
    from computeeval_corpus import baselines
    from computeeval_fixtures import write_pack

    from cudaenv.problems.datapack import read_problem_datapack, write_solution_datapack

    problems = write_pack(work / "problems.tar.gz")
    solutions = work / "solutions.tar.gz"
    write_solution_datapack(baselines(read_problem_datapack(problems)), solutions)
    return problems, solutions


def stage_agreement(gate: Any, cap: float) -> None:
    started = time.monotonic()
    ce = os.environ.get("COMPUTE_EVAL_PYTHON", "")
    if not (ce and Path(ce).exists()):
        gate.finish(
            "agreement", True, 0.0,
            skipped="no ComputeEval evaluator here: set COMPUTE_EVAL_PYTHON to a venv with "
            "nvidia-compute-eval (the library groups' own GPU tests ran in gpu_tests)",
        )  # fmt: skip
        return
    staged = Path(os.environ.get("GATE_CE_DIR", ROOT / ".ce-stage"))
    if (staged / "problems.tar.gz").is_file() and (staged / "solutions.tar.gz").is_file():
        corpus = str(staged)
        problems, solutions = staged / "problems.tar.gz", staged / "solutions.tar.gz"
    else:
        corpus = "our fixtures (no corpus staged in $GATE_CE_DIR)"
        problems, solutions = _fixture_corpus(Path(tempfile.mkdtemp(prefix="gate-ce-")))
    cmd = [sys.executable, "bench/bench_computeeval_agreement.py", str(problems), str(solutions),
           "--workers", "4", "--ce-python", ce, "--out", str(gate.dir / "computeeval")]  # fmt: skip
    pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out, rc = _run(cmd, cap, env={**os.environ, "PYTHONPATH": pythonpath})
    (gate.dir / "agreement.txt").write_text(out)
    ok = rc == 0 and "per group" in out and "DISAGREE" not in out
    agreement = next((ln for ln in out.splitlines() if ln.startswith("agreement:")), None)
    gate.finish(
        "agreement", ok, time.monotonic() - started, rc=rc, corpus=corpus, agreement=agreement
    )


# ---- tables ----------------------------------------------------------------------------------

COLUMNS = {  # the columns each stage's rows show, in order (others are left to the JSONL)
    "validate": ["task_id", "ok", "speedup", "sol_fraction", "floor_ms", "problem"],
    "optimize": ["task_id", "ok", "speedup", "sol_fraction", "l2_flush_bytes", "reason"],
    "sanitizer": ["case", "ok", "sanitizer", "reason"],
    "aa": ["task_id", "ok", "timing", "median_ms", "cv", "cv_target", "false_rate_resampled"],
    "families-gpu-gate": ["task_id", "ok", "mutants_passed"],
    "questions": ["task_id", "ok"],
}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    text = "" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def table(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    cols = [c for c in columns if any(c in r for r in rows)] or sorted(rows[0])[:6]
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return lines


def print_tables(out: Path) -> None:
    """Every stage's summary, then each stage's rows, from what the gate wrote under ``out``."""
    summary_path = out / "gate.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    print("\n== GPU gate summary")
    if not summary:
        print("(no stage ran)")
    for stage, s in summary.items():
        detail = {k: v for k, v in s.items() if k not in ("ok", "seconds")}
        state = "SKIPPED" if s.get("skipped") else ("ok" if s["ok"] else "FAILED")
        print(f"{stage:10} {state:8} {s['seconds']:>6} s  {json.dumps(detail, default=str)[:300]}")
    for stage, columns in COLUMNS.items():
        path = out / "gate" / f"{stage}.jsonl"
        if not path.is_file():
            continue
        rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
        if rows:
            print(f"\n== {stage} ({len(rows)} rows)")
            print("\n".join(table(rows, columns)))
    for name in ("redteam", "agreement"):
        path = out / "gate" / f"{name}.txt"
        if path.is_file():
            print(f"\n== {name} (last lines of {path.name})")
            print("\n".join(path.read_text().splitlines()[-40:]))
