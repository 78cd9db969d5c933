"""Compiler cache: the build of a NEW solution of a problem already graded, ccache off vs on.

Why: an RL run grades many different solutions of each problem; every one of them compiles the
same hidden harness. With the compiler cache (cudaenv.grading.ccache) the harness object is
compiled once per machine, so a new solution pays for its own sources and the link only.

    python bench/bench_ccache.py [--limit 8] [--samples 3] [--ids a,b]
                                 [--sandbox docker --image cudaenv-eval:local]

For each nvcc problem of the bundled suite (its reference solution, made distinct per sample
by an appended unused static, so the build cache never answers): one build to mark the
problem seen (the first build of a problem never uses ccache), one that stores the harness
(a ccache miss: the cost of filling the cache), then ``samples`` pairs built alternately with
the cache off and on. Prints median build seconds per problem and the ratio off / on,
measured side by side in one run, in a fresh temporary cache directory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv import load_suite
from cudaenv.grading import ccache
from cudaenv.grading.grader import grade
from cudaenv.problems.model import Problem


def variant(problem: Problem, tag: str) -> dict[str, str]:
    assert problem.solution is not None
    return {
        f.path: f.content + f"\nstatic int cudaenv_bench_{tag} = 0;\n"
        for f in problem.solution.files
    }


def build_s(problem: Problem, tag: str, *, cache: bool, sandbox: str, options: dict) -> float:
    """The build stage's seconds (a docker build container's start not included)."""
    v = grade(
        problem,
        variant(problem, tag),
        compiler_cache=cache,
        test_cache=False,
        sandbox=sandbox,
        sandbox_options=options,
    )
    stage = v.stages.get("build")
    if not v.compiled or stage is None or stage.cached:
        raise RuntimeError(f"{problem.task_id}: build {v.reason}")
    return stage.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=8, help="first N nvcc problems (0: all)")
    parser.add_argument("--samples", type=int, default=3, help="off/on pairs per problem")
    parser.add_argument("--ids", default="", help="comma-separated task ids")
    parser.add_argument("--sandbox", default="local", choices=["local", "docker"])
    parser.add_argument("--image", default=None, help="docker: the image (its own ccache)")
    args = parser.parse_args()
    options = {"image": args.image} if args.image else {}
    if args.sandbox == "local" and (ccache.ccache_binary() is None or ccache.real_nvcc() is None):
        sys.exit("ccache or nvcc is not installed: nothing to measure")
    suite = load_suite("builtin")
    if args.ids:
        suite = suite.filter(include=args.ids.split(","))
    problems = [p for p in suite if p.solution and ccache.compiler_only(p.build_command or "")]
    if args.limit:
        problems = problems[: args.limit]

    tmp = Path(tempfile.mkdtemp(prefix="cudaenv-bench-ccache-"))
    os.environ["CUDAENV_CACHE_DIR"] = str(tmp)
    rows: list[tuple[str, float, float, float]] = []
    try:
        for p in problems:
            run = {"sandbox": args.sandbox, "options": options}
            build_s(p, "seen", cache=True, **run)  # first build of the problem: plain, marked
            fill = build_s(p, "fill", cache=True, **run)  # harness compiled and stored
            off, on = [], []
            for i in range(args.samples):
                off.append(build_s(p, f"off{i}", cache=False, **run))
                on.append(build_s(p, f"on{i}", cache=True, **run))
            rows.append((p.task_id, statistics.median(off), statistics.median(on), fill))
        stats = ccache.stats(ccache.container_cache_root() if args.sandbox == "docker" else None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    print(
        f"{len(rows)} problems, {args.samples} samples each, {args.sandbox} sandbox, medians; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'problem':<{width}}  {'off s':>6}  {'on s':>6}  {'off/on':>6}  {'fill s':>6}")
    for name, off_s, on_s, fill_s in rows:
        print(
            f"{name:<{width}}  {off_s:>6.2f}  {on_s:>6.2f}  {off_s / on_s:>5.2f}x  {fill_s:>6.2f}"
        )
    total_off = sum(r[1] for r in rows)
    total_on = sum(r[2] for r in rows)
    fills = sum(r[3] for r in rows)
    print(
        f"{'all':<{width}}  {total_off:>6.2f}  {total_on:>6.2f}  {total_off / total_on:>5.2f}x  "
        f"{fills:>6.2f}"
    )
    print(f"fill (harness miss) vs off: {fills / total_off:.2f}x; ccache counters: {stats}")


if __name__ == "__main__":
    main()
