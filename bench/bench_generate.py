"""Generation cost of the problem families, and the release gate's cost per generated problem.

Why: ``load_suite("generated")`` makes the default set on first use instead of shipping it, so
making it must stay cheap (target: <= 30 s for the default set, in a fresh process, with the
grader's validate of the hand-written suite as the side-by-side figure per problem); and
``cudaenv validate generated --sample N`` must stay affordable per problem.

    python bench/bench_generate.py [--sample 60] [--seed 18] [--workers 2] [--skip-validate]

The generation runs in a fresh interpreter (nothing cached, imports included). The validate
figure grades a seeded sample spanning every family with ``validate_problem`` (reference,
NOP, baseline; a GPU adds the benchmark), reports seconds per problem by problem type, and
for comparison validates the same number of hand-written problems (cycling the suite).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GENERATE = """
import time
t = time.perf_counter()
from cudaenv.families import default_set
problems = default_set()
print(len(problems), sum(p.problem_type == "cuda_python" for p in problems), time.perf_counter() - t)
"""


def generation_seconds() -> tuple[int, int, float]:
    out = subprocess.run(
        [sys.executable, "-c", GENERATE], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout.split()  # fmt: skip
    return int(out[0]), int(out[1]), float(out[2])


def validate_seconds(problems: list, workers: int) -> dict[str, list[float]]:
    from cudaenv.grading.release_gate import validate_problem

    def one(p: object) -> tuple[str, float, bool]:
        t = time.perf_counter()
        row = validate_problem(p)  # type: ignore[arg-type]
        return p.problem_type, time.perf_counter() - t, row.ok  # type: ignore[attr-defined]

    by_type: dict[str, list[float]] = {}
    with ThreadPoolExecutor(workers) as pool:
        for kind, seconds, ok in pool.map(one, problems):
            by_type.setdefault(kind, []).append(seconds)
            if not ok:
                print(f"  a {kind} problem failed validate", file=sys.stderr)
    return by_type


def _report(label: str, by_type: dict[str, list[float]]) -> float:
    total = [s for v in by_type.values() for s in v]
    parts = ", ".join(
        f"{k} {statistics.mean(v):.1f} s x{len(v)}" for k, v in sorted(by_type.items())
    )
    mean = statistics.mean(total) if total else 0.0
    print(f"{label}: {mean:.1f} s per problem ({parts})")
    return mean


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-validate", action="store_true")
    args = ap.parse_args()
    count, numba, seconds = generation_seconds()
    print(f"default set: {count} problems ({numba} numba-cuda) generated in {seconds:.2f} s "
          f"(target <= 30 s: {'ok' if seconds <= 30 else 'MISSED'})")  # fmt: skip
    if args.skip_validate:
        return
    os.environ.setdefault("CUDAENV_CACHE_DIR", tempfile.mkdtemp(prefix="bench-generate-"))
    from cudaenv.families import default_set, sample
    from cudaenv.problems import load_suite

    picked = sample(default_set(), args.sample, seed=args.seed)
    gen = _report(
        f"validate, {len(picked)} generated problems", validate_seconds(picked, args.workers)
    )
    builtin = list(load_suite("builtin"))
    hand = [builtin[i % len(builtin)] for i in range(min(len(picked), len(builtin)))]
    ref = _report(
        f"validate, {len(hand)} hand-written problems", validate_seconds(hand, args.workers)
    )
    if ref:
        print(f"generated / hand-written cost per problem: {gen / ref:.2f}")


if __name__ == "__main__":
    main()
