"""Cost of grading a repository task: a re-grade (the task's pre-built tree, ccache as CMake's
compiler launcher) against a full build (clean configure and build, no compiler cache).

    python bench/repo_regrade.py ROWS.jsonl [--ids a,b] [--solution gold|nop] [--rounds 2]

For each row it grades the same solution three ways, in this order, and prints the seconds of
each grading and of its configure and build steps:

- ``full``: ``prebuilt_tree=False, compiler_cache=False``: what every grading cost before.
- ``prebuilt``: the pre-built tree, no compiler cache: only what the diff touches rebuilds.
- ``regrade``: the pre-built tree and the compiler cache, warmed by one grading first: what
  a grading of a solution already seen (or of the test patch's files, compiled once) costs.

The ratio full / regrade is the speedup. Timings depend on the machine's load: compare rows
of one run, never across runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.grading.repo_grader import grade_repository
from cudaenv.problems.loader import load_suite


def timed(problem, solution, **options) -> dict:
    started = time.perf_counter()
    v = grade_repository(problem, solution, **options)
    seconds = round(time.perf_counter() - started, 2)
    steps = {k: v.stages[k].seconds for k in ("configure", "build") if k in v.stages}
    return {"seconds": seconds, "passed": v.passed, "reason": v.reason, **steps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--ids", default="")
    ap.add_argument("--solution", choices=("gold", "nop"), default="gold")
    ap.add_argument("--rounds", type=int, default=2, help="timed re-grades (median kept)")
    args = ap.parse_args(argv)
    suite = load_suite(args.rows)
    ids = [i for i in args.ids.split(",") if i] or list(suite.ids)
    print(
        "| task | way | seconds | configure | build | passed |\n| --- | --- | --- | --- | --- | --- |"
    )
    for task_id in ids:
        p = suite[task_id]
        sol = p.solution if args.solution == "gold" else ""
        full = timed(p, sol, prebuilt_tree=False, compiler_cache=False)
        pre = timed(p, sol, compiler_cache=False)
        timed(p, sol)  # warms the compiler cache with this solution's objects
        regrades = sorted(
            (timed(p, sol) for _ in range(max(1, args.rounds))), key=lambda r: r["seconds"]
        )
        regrade = regrades[len(regrades) // 2]
        for way, r in (("full", full), ("prebuilt", pre), ("regrade", regrade)):
            print(
                f"| {task_id} | {way} | {r['seconds']} | {r.get('configure', '-')} | "
                f"{r.get('build', '-')} | {r['passed']} |",
                flush=True,
            )
        print(
            f"| {task_id} | full / regrade | {full['seconds'] / max(regrade['seconds'], 1e-9):.1f}x | | | |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
