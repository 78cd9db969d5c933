"""The grader's speedup measurement on real programs, side by side with its control.

Why: optimize mode rewards the speedup over a known-good baseline, so a clearly faster
solution must measure as clearly faster, a solution identical to the baseline as about 1x,
and nothing a solution's test run leaves behind may move the number. The tests check the
grader's arithmetic and its kills on scripted timings (tests/grading/test_benchmark_cpu.py);
this script checks the magnitudes, which depend on the machine and its load. Targets
(median over ``--gradings`` gradings of ``--rounds`` interleaved rounds each):

- CPU problem, reference vs a baseline of 2*10^8 dependent additions: speedup >= 2
  (typically far more: the reference is one addition);
- control, the baseline graded against itself: 0.67 <= speedup <= 1.5;
- the reference again, its test run leaving a busy loop behind: no speedup, the verdict fails
  as tampering (the grader kills the loop before any timed round and flags the leftover as a
  suspected hack; unkilled, it would share the cores with the timed rounds);
- with a GPU (``--gpu``): the suite's fused-axpby, reduce-sum and thrust-sort-by-key
  references vs their baselines, region timing through the profiler: speedup > 1.

    python bench/bench_speedup.py [--gradings 5] [--rounds 5] [--load 0] [--gpu]

``--load N`` keeps N busy loops running throughout (the CI machine's case: both cores busy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv import load_suite
from cudaenv.grading.grader import grade
from cudaenv.problems.directory import write_problem_dir
from cudaenv.problems.model import Problem
from cudaenv.toolkit import has_gpu

HEADER = "int add(int a, int b);\n"
TEST = """\
#include <cstdio>
#include "add.h"
int main() {
    if (add(2, 3) != 5) { printf("FAIL\\n"); return 1; }
    printf("ok\\n");
    return 0;
}
"""
REFERENCE = '#include "add.h"\nint add(int a, int b) { return a + b; }\n'
BASELINE = """\
#include "add.h"
int add(int a, int b) {
    volatile long s = 0;
    for (long i = 0; i < 200000000; ++i) s = s + i;
    return a + b + (int)(s - s);
}
"""
BUSY_LEFTOVER = "(exec -a cudaenv-bench-leftover bash -c 'while :; do :; done' >/dev/null 2>&1 &)"
Row = tuple[str, float, str]  # name, median speedup, target verdict


def cpu_problem(root: Path, task_id: str, test_command: str) -> Problem:
    spec = {
        "task_id": task_id,
        "date": "2026-11-01",
        "problem_type": "cuda_cpp",
        "group": "cuda-kernels",
        "prompt": "Implement add.",
        "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
        "test_command": test_command,
        "benchmark_command": "./test.out",
        "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
    }
    files = {
        "context/include/add.h": HEADER,
        "test/test_main.cpp": TEST,
        "solution/solution.cpp": REFERENCE,
        "baseline/solution.cpp": BASELINE,
    }
    write_problem_dir(root, spec, files)
    return load_suite(root)[task_id]


def speedups(problem: Problem, files: dict[str, str], gradings: int, rounds: int) -> list[float]:
    """One speedup per grading, each timing the baseline afresh (``force_baseline``)."""
    out = []
    for _ in range(gradings):
        v = grade(problem, files, mode="optimize", rounds=rounds, force_baseline=True)
        if v.speedup is None:
            raise SystemExit(f"{problem.task_id}: no speedup ({v.reason})")
        out.append(v.speedup)
    return out


def within(value: float, lo: float | None, hi: float | None) -> str:
    ok = (lo is None or value >= lo) and (hi is None or value <= hi)
    bounds = " ".join(
        [f">= {lo:g}" if lo is not None else "", f"<= {hi:g}" if hi is not None else ""]
    )
    return f"{bounds.strip()} {'PASS' if ok else 'MISS'}"


@contextmanager
def busy_loops(n: int) -> Iterator[None]:
    hogs = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def cpu_rows(root: Path, gradings: int, rounds: int) -> list[Row]:
    clean = cpu_problem(root, "bench-cpu-add", "./test.out")
    dirty = cpu_problem(root, "bench-cpu-leftover", f"./test.out; s=$?; {BUSY_LEFTOVER}; exit $s")
    ref = statistics.median(speedups(clean, {"solution.cpp": REFERENCE}, gradings, rounds))
    same = statistics.median(speedups(clean, {"solution.cpp": BASELINE}, gradings, rounds))
    left = grade(dirty, {"solution.cpp": REFERENCE}, mode="optimize", rounds=rounds)
    refused = left.speedup is None and not left.passed and "outlived" in (left.reason or "")
    return [
        ("cpu: reference vs baseline", ref, within(ref, 2.0, None)),
        ("cpu: baseline vs baseline (control)", same, within(same, 0.67, 1.5)),
        (
            "cpu: reference, busy leftover from its tests",
            float("nan") if left.speedup is None else left.speedup,
            "failed as tampering PASS" if refused else f"MISS ({left.reason})",
        ),
    ]


def gpu_rows(gradings: int, rounds: int) -> list[Row]:
    suite = load_suite("builtin")
    rows: list[Row] = []
    for task_id in ("fused-axpby", "reduce-sum", "thrust-sort-by-key"):
        p = suite[task_id]
        assert p.solution is not None
        s = statistics.median(speedups(p, p.solution, gradings, rounds))
        rows.append((f"gpu: {task_id} reference vs baseline", s, within(s, 1.0, None)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradings", type=int, default=5, help="gradings per row")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per grading")
    parser.add_argument("--load", type=int, default=0, help="busy loops kept running")
    parser.add_argument("--gpu", action="store_true", help="also the suite's GPU problems")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cudaenv-bench-speedup-"))
    os.environ["CUDAENV_CACHE_DIR"] = str(tmp / "cache")  # no cached baseline timings
    with busy_loops(args.load):
        rows = cpu_rows(tmp / "suite", args.gradings, args.rounds)
        if args.gpu:
            rows += (
                gpu_rows(args.gradings, args.rounds)
                if has_gpu()
                else [("gpu rows", float("nan"), "skipped: no GPU")]
            )
    print(f"{'row':48} {'speedup':>9}  target  ({args.load} busy loops)")
    for name, value, verdict in rows:
        print(f"{name:48} {value:9.2f}  {verdict}")


if __name__ == "__main__":
    main()
