"""Run the oracle over the bundled suite and print pass@1 by group.

Without a GPU the GPU stages are skipped (``passed`` is None: "not run"), so this checks that
every reference compiles; on a GPU host it is the suite's positive control (all pass).

    python examples/evaluate.py [--workers 2] [--ray] [--out runs/oracle]
"""

from __future__ import annotations

import argparse
import json

from cudaenv.grading.summary import Graded, summarise
from cudaenv.problems.loader import load_suite
from cudaenv.rollout import run_episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true")
    parser.add_argument("--out", default="runs/oracle", help="results directory (resumable)")
    parser.add_argument("--groups", default="", help="comma-separated groups (default: all)")
    args = parser.parse_args()

    suite = load_suite("builtin")
    if args.groups:
        suite = suite.filter(groups=args.groups.split(","))
    rows = []
    for res in run_episodes(
        "oracle", suite, workers=args.workers, use_ray=args.ray, out_dir=args.out
    ):
        state = (
            res.status
            if res.status != "ok"
            else {True: "pass", False: "FAIL", None: "not run"}[
                res.verdict.passed if res.verdict else None
            ]
        )
        print(f"{res.task_id:32s} {state:14s} {res.seconds:6.1f}s")
        if res.verdict is not None:
            rows.append(
                Graded(
                    task_id=res.task_id, group=res.group, sample=res.attempt, verdict=res.verdict
                )
            )
    print(json.dumps(summarise(rows, [1]), indent=2))


if __name__ == "__main__":
    main()
