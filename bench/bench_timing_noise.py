"""A/A timing noise: every bundled reference timed against itself through the grader's real
benchmark path.

Why: optimize mode rewards a speedup, so two runs of the same program must measure as the
same. Each problem's reference becomes its own baseline and is graded in optimize mode
(``grade(..., force_baseline=True)``: interleaved rounds, both sides timed beside each other
by the problem's timing mode, the profiler for region/kernel timing). Reported per problem:
the coefficient of variation of single samples (targets: CV <= 1% for kernels >= 50 us,
<= 3% for 5-50 us) and the rate of false ">= 1.05x" verdicts (target < 1%), observed over the
gradings and estimated by resampling the measured samples (``--draws`` verdicts of
``--rounds`` rounds each side). Needs a GPU.

    python bench/bench_timing_noise.py [--problems fused-axpby,reduce-sum] [--limit 8]
        [--gradings 3] [--rounds 5] [--budget-s 0] [--jsonl rows.jsonl] [--json out.json]

Problems run in priority order (``PRIORITY``, then the rest); with ``--jsonl`` each row is
appended as soon as its problem finishes, and ``--budget-s`` stops starting new problems once
that many seconds have passed, so a bounded run still leaves its rows behind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.grading.grader import grade
from cudaenv.grading.verdict import Verdict
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem, Solution
from cudaenv.toolkit import gpu_info, has_gpu

FALSE_SPEEDUP = 1.05
# timing modes and groups mixed, the quick ones first: the A/A gate's 8 problems
PRIORITY = (
    "fused-axpby",
    "reduce-sum",
    "transpose",
    "softmax-rows",
    "cublas-gemv-rows",
    "thrust-sort-by-key",
    "py-vector-add",
    "sgemm-tiled",
)


def cv_target(median_ms: float) -> float | None:
    """The issue's targets: 1% at >= 50 us, 3% at 5-50 us, none below."""
    if median_ms >= 0.05:
        return 0.01
    if median_ms >= 0.005:
        return 0.03
    return None


def aa_problem(problem: Problem) -> Problem:
    """The problem with its reference as its baseline: A timed against A."""
    assert problem.solution is not None
    reference = Solution.model_validate(problem.solution.model_dump())
    return problem.model_copy(update={"baseline_solution": reference})


def resampled_false_rate(
    samples: list[float], rounds: int, draws: int, seed: int = 0
) -> float | None:
    """P(median of ``rounds`` samples / median of another ``rounds`` >= 1.05) when both
    sides are drawn from the same measured samples."""
    if len(samples) < 2 or rounds < 1:
        return None
    rng = np.random.default_rng(seed)
    pool = np.asarray(samples)
    a = np.median(rng.choice(pool, (draws, rounds)), axis=1)
    b = np.median(rng.choice(pool, (draws, rounds)), axis=1)
    return float(np.mean(b / a >= FALSE_SPEEDUP))


def _timing_kind(problem: Problem) -> str:
    mode = problem.timing_mode
    return f"{mode.type}/{getattr(mode, 'time_type', '')}".rstrip("/")


def run_problem(problem: Problem, gradings: int, rounds: int, draws: int) -> dict[str, Any]:
    """A/A gradings of one problem: the row the report prints."""
    started = time.perf_counter()
    aa = aa_problem(problem)
    samples: list[float] = []
    speedups: list[float] = []
    dropped = 0
    errors: list[str] = []
    for _ in range(gradings):
        v: Verdict = grade(
            aa,
            problem.solution,
            mode="optimize",
            benchmark=True,
            rounds=rounds,
            force_baseline=True,
        )
        if not v.passed or v.solution_timing is None or v.baseline_timing is None:
            errors.append(v.reason or f"passed={v.passed}, no timing")
            continue
        samples += v.solution_timing.samples_ms + v.baseline_timing.samples_ms
        dropped += v.solution_timing.throttled_dropped + v.baseline_timing.throttled_dropped
        if v.speedup is not None:
            speedups.append(v.speedup)
    row: dict[str, Any] = {
        "task_id": problem.task_id,
        "timing": _timing_kind(problem),
        "gradings": gradings,
        "rounds": rounds,
        "errors": errors,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if len(samples) < 2:
        return row | {"ok": False}
    median = statistics.median(samples)
    cv = statistics.pstdev(samples) / statistics.fmean(samples)
    target = cv_target(median)
    false_seen = sum(s >= FALSE_SPEEDUP for s in speedups) / len(speedups) if speedups else None
    false_est = resampled_false_rate(samples, rounds, draws)
    ok = (target is None or cv <= target) and (false_est is None or false_est < 0.01)
    return row | {
        "median_ms": median,
        "cv": cv,
        "cv_target": target,
        "speedups": speedups,
        "false_rate_observed": false_seen,
        "false_rate_resampled": false_est,
        "throttled_dropped": dropped,
        "ok": ok and not errors,
    }


def ordered(suite: list[Problem], wanted: list[str] | None) -> list[Problem]:
    timed = {p.task_id: p for p in suite if p.has_benchmark and p.solution is not None}
    names = wanted or [*[t for t in PRIORITY if t in timed], *sorted(set(timed) - set(PRIORITY))]
    missing = [n for n in names if n not in timed]
    if missing:
        raise SystemExit(f"not a benchmarked problem with a reference: {', '.join(missing)}")
    return [timed[n] for n in names]


def _line(r: dict[str, Any]) -> str:
    if "cv" not in r:
        return f"{r['task_id']:<26} FAILED {'; '.join(r['errors'])[:120]}"
    target = f"<= {r['cv_target']:.0%}" if r["cv_target"] else "(none)"
    fr = r["false_rate_resampled"]
    return (
        f"{r['task_id']:<26} {r['timing']:<18} {r['median_ms']:>10.4f} ms  CV {r['cv']:6.2%} "
        f"{target:<7} false>=1.05x {fr if fr is None else f'{fr:.2%}'}  "
        f"{'ok' if r['ok'] else 'MISS'}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", help="comma-separated task ids (default: all, priority first)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N problems")
    ap.add_argument("--gradings", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--draws", type=int, default=4000, help="resampled A/A verdicts")
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no problem after this")
    ap.add_argument("--jsonl", type=Path, help="append each problem's row as it finishes")
    ap.add_argument("--json", type=Path, help="write every row at the end")
    args = ap.parse_args(argv)
    if not has_gpu():
        print(
            "bench_timing_noise needs a GPU: it times references through the GPU profiler, "
            "and nvidia-smi found no NVIDIA GPU here. Nothing was measured.",
            file=sys.stderr,
        )
        return 2
    problems = ordered(list(load_suite("builtin")), args.problems and args.problems.split(","))
    if args.limit:
        problems = problems[: args.limit]
    info = gpu_info()
    print(f"A/A timing noise on {info.name if info else '?'}: {len(problems)} problems")
    started = time.monotonic()
    rows = []
    for p in problems:
        if args.budget_s and time.monotonic() - started > args.budget_s:
            print(f"budget of {args.budget_s:g} s spent: {p.task_id} and later not run")
            break
        row = run_problem(p, args.gradings, args.rounds, args.draws)
        rows.append(row)
        print(_line(row), flush=True)
        if args.jsonl:
            with args.jsonl.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"gpu": info and info.name, "rows": rows}, indent=1))
    return 0 if rows and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
