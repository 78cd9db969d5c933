"""The optimize-mode pipeline for real, on a CPU-only problem (no GPU needed): interleaved
solution/baseline rounds timed by the grader's clock, the speedup and its interval, the
baseline cache and its override, and the speedup rewards. GPU problems take the same path
with the GPU lease and the profiler (tests/grading/test_grader_gpu.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading import rewards
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem

# the baseline burns ~10^8 dependent additions per call: tens of milliseconds
SLOW_SOLUTION = """\
#include "add.h"
int add(int a, int b) {
    volatile long s = 0;
    for (long i = 0; i < 40000000; ++i) s = s + i;
    return a + b + (int)(s - s);
}
"""


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Problem:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    root = write_problem(
        tmp_path / "suite",
        "cpu-add-bench",
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "benchmark_command": "./test.out",
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": SLOW_SOLUTION,
        },
    )
    return load_suite(root.parent)["cpu-add-bench"]


def test_optimize_mode_measures_a_speedup(problem: Problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, mode="optimize", rounds=3)
    assert v.passed is True, v.reason
    bench = v.stages["benchmark"]
    assert bench.status == "ok" and "timed on the CPU" in (bench.reason or "")
    assert v.solution_timing and len(v.solution_timing.samples_ms) == 3
    assert v.baseline_timing and len(v.baseline_timing.samples_ms) == 3
    assert v.baseline_ms and v.solution_ms and v.baseline_ms > 3 * v.solution_ms
    assert v.speedup == pytest.approx(v.baseline_ms / v.solution_ms)
    assert v.speedup_ci is not None and v.speedup_ci[0] <= v.speedup <= v.speedup_ci[1]
    assert rewards.speedup(v) > 1.0  # log2 of a speedup above 2
    assert rewards.tiered(v) > rewards.binary(v) - 1.0
    assert rewards.get_reward(None, "optimize")(v) == rewards.speedup(v)


def test_a_slower_solution_gets_no_speedup_credit(problem: Problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": SLOW_SOLUTION}, mode="optimize", rounds=3)
    assert v.passed is True and v.speedup is not None
    assert v.speedup < 1.5
    assert rewards.speedup(v) <= 0.6


def test_baseline_timing_is_cached_and_can_be_forced(problem: Problem) -> None:
    files = {"solution.cpp": CPU_SOLUTION}
    first = cudaenv.grade(problem, files, mode="optimize", rounds=2)
    again = cudaenv.grade(problem, files, mode="optimize", rounds=2)
    assert first.baseline_timing and again.baseline_timing
    # not re-timed: the very same samples come back from the cache
    assert again.baseline_timing.samples_ms == first.baseline_timing.samples_ms
    forced = cudaenv.grade(problem, files, mode="optimize", rounds=2, force_baseline=True)
    assert forced.baseline_timing is not None
    assert forced.baseline_timing.samples_ms != first.baseline_timing.samples_ms
    assert forced.speedup is not None and forced.speedup > 2


def test_solve_mode_does_not_benchmark_unless_asked(problem: Problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION})
    assert "benchmark" not in v.stages and v.speedup is None
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, benchmark=True, rounds=1)
    assert v.stages["benchmark"].status == "ok" and v.speedup is not None


def test_nothing_from_the_test_run_outlives_it(tmp_path: Path, monkeypatch) -> None:
    """A process the test stage leaves running (here the problem's own test command starts
    one, as a solution that slipped past the static checks might) is gone before any timed
    run: otherwise it could load the machine during the baseline's runs."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    leftover = "(exec -a cudaenv-leftover sleep 300 &)"
    check = "if pgrep -f 'cudaenv-leftove[r]' >/dev/null; then echo LEFTOVER; exit 3; fi"
    root = write_problem(
        tmp_path / "suite",
        "cpu-leftover",
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "test_command": f"./test.out; s=$?; {leftover}; exit $s",
            "benchmark_command": f"{check}; ./test.out",
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": SLOW_SOLUTION,
        },
    )
    problem = load_suite(root.parent)["cpu-leftover"]
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, mode="optimize", rounds=2)
    assert v.stages["benchmark"].status == "ok", v.stages["benchmark"]
    assert v.speedup is not None and v.speedup > 2
