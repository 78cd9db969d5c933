"""What a split harness's trusted checker costs per grading, part by part.

Why: every split grading pays for its checker (issue 27 asks what the trusted comparison costs):
a sandbox of its own, a Python process per ``gen`` (draw a run's inputs) and per ``verify``
(decide on its outputs), and the copies of the inputs in and the outputs out. Some of it runs
beside other work (the test run's draw during the build, each later run's draw during the
verify before it); what the grading waits for is the time the grading's own thread spends in
the checker, reported apart.

    python bench/bench_checker_cost.py [--ids py-vector-add,...] [--fixtures]
        [--mode solve|optimize] [--rounds 5] [--reps 3]

``--fixtures`` grades the red-team CPU fixtures (``cpu-add-bench`` times its benchmark on the
CPU, so ``--mode optimize`` runs every benchmark round's checker here, no GPU needed). Each
grading runs with the test outcome cache off (every grading runs its test); the first is a
warm-up (builds cached). Timings come from wrapping the checker's methods: nothing else changes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv import load_suite
from cudaenv.grading import checker as checker_module
from cudaenv.grading.grader import grade
from cudaenv.redteam.fixtures import fixture_suite

#: the checker's parts: the grading thread waits for these (a draw it did not start ahead
#: shows up in ``start``); ``bg gen`` is the draws made ahead, in another thread
PARTS = {
    "start": "start: a run's inputs (waits for a draw made ahead)",
    "lay": "lay: inputs into the solution's sandbox",
    "collect": "collect: outputs out of the solution's sandbox",
    "judge": "judge: verify (outputs into the checker's sandbox, decide)",
    "close": "close: the checker's sandbox",
}


def instrument(spent: dict[str, float]) -> None:
    """Wrap the checker's methods so each call adds its seconds to ``spent`` (by thread)."""
    lock = threading.Lock()
    main = threading.main_thread()
    cls: Any = checker_module.Checker

    def wrap(name: str) -> None:
        raw = cls.__dict__[name]
        fn: Callable[..., Any] = raw.__func__ if isinstance(raw, staticmethod) else raw

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = name if threading.current_thread() is main else f"bg {name}"
                with lock:
                    spent[key] += time.perf_counter() - began

        setattr(cls, name, staticmethod(timed) if isinstance(raw, staticmethod) else timed)

    for name in (*PARTS, "_start"):
        wrap(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", default="py-vector-add", help="comma-separated task ids")
    parser.add_argument("--fixtures", action="store_true", help="the red-team CPU fixtures")
    parser.add_argument("--mode", default="solve", choices=("solve", "optimize"))
    parser.add_argument("--rounds", type=int, default=5, help="benchmark rounds (optimize)")
    parser.add_argument("--reps", type=int, default=3, help="timed gradings per problem")
    args = parser.parse_args()
    os.environ.setdefault("CUDAENV_CACHE_DIR", tempfile.mkdtemp(prefix="cudaenv-bench-checker-"))
    suite = load_suite(fixture_suite().root) if args.fixtures else load_suite("builtin")
    problems = [suite[i] for i in args.ids.split(",")]
    spent: dict[str, float] = defaultdict(float)
    instrument(spent)
    rows: dict[str, list[float]] = defaultdict(list)
    for p in problems:
        if p.checker is None:
            raise SystemExit(f"{p.task_id} is not a split harness")
        kw: dict[str, Any] = {"mode": args.mode, "rounds": args.rounds, "test_cache": False}
        grade(p, p.solution, **kw)  # warm-up: builds (and the baseline's) cached
        for _ in range(args.reps):
            spent.clear()
            began = time.perf_counter()
            v = grade(p, p.solution, **kw)
            wall = time.perf_counter() - began
            if v.passed is not True:
                raise SystemExit(f"{p.task_id}: {v.reason}")
            waited = sum(spent[k] for k in PARTS)
            rows["grading (wall)"].append(wall)
            rows["checker, waited for by the grading"].append(waited)
            rows["  share of the grading"].append(waited / wall)
            for key, label in PARTS.items():
                rows[f"  {label}"].append(spent[key])
            rows["draws made ahead (bg gen)"].append(spent["bg _start"])
    print(
        f"{len(problems)} problem(s) x {args.reps} grading(s), mode {args.mode}"
        + (f", {args.rounds} rounds" if args.mode == "optimize" else "")
        + "; seconds per grading"
    )
    width = max(len(k) for k in rows)
    print(f"{'':<{width}}  {'median':>7}  {'min':>7}  {'max':>7}")
    for key, xs in rows.items():
        print(f"{key:<{width}}  {statistics.median(xs):>7.3f}  {min(xs):>7.3f}  {max(xs):>7.3f}")


if __name__ == "__main__":
    main()
