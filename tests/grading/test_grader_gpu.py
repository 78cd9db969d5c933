"""GPU paths of the grader: tests, interleaved benchmark timing through the profiler,
speedup against the baseline, and the sanitizer gate. Skipped without a GPU."""

from __future__ import annotations

import statistics

import pytest

import cudaenv
from cudaenv.grading.timing import speedup_ci
from cudaenv.problems import load_suite
from cudaenv.toolkit import has_gpu

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU visible (nvidia-smi found none)"),
]

SUITE = load_suite("builtin") if has_gpu() else None


def _bench_problem(task_id: str):
    assert SUITE is not None
    return SUITE[task_id]


@pytest.mark.parametrize("task_id", ["fused-axpby", "reduce-sum", "thrust-sort-by-key"])
def test_reference_and_baseline_are_timed_with_region_timing(task_id: str) -> None:
    """Both sides timed by the profiler, three rounds each, and the speedup and its interval
    computed from those samples. That the reference is faster is a magnitude that depends on
    the GPU and its load: ``bench/bench_speedup.py --gpu`` measures it."""
    p = _bench_problem(task_id)
    v = cudaenv.grade(p, p.solution, mode="optimize", rounds=3, force_baseline=True)
    assert v.passed is True, v.reason
    assert v.stages["benchmark"].status == "ok", v.stages["benchmark"].reason
    assert v.solution_timing and v.baseline_timing
    assert v.solution_timing.source == v.baseline_timing.source == p.timing_mode.type
    sol, base = v.solution_timing.samples_ms, v.baseline_timing.samples_ms
    assert len(sol) == len(base) == 3 and all(ms > 0 for ms in sol + base)  # GPU work was seen
    assert v.solution_ms == pytest.approx(statistics.median(sol))
    assert v.baseline_ms == pytest.approx(statistics.median(base))
    assert v.speedup == pytest.approx(v.baseline_ms / v.solution_ms)
    assert v.speedup_ci == pytest.approx(speedup_ci(sol, base))


def test_baseline_timing_is_cached() -> None:
    p = _bench_problem("fused-axpby")
    cudaenv.grade(p, p.solution, mode="optimize", rounds=2, force_baseline=True)
    v = cudaenv.grade(p, p.solution, mode="optimize", rounds=2)
    assert v.baseline_timing is not None and v.speedup is not None


def test_nop_fails_on_gpu() -> None:
    p = _bench_problem("transpose")
    v = cudaenv.grade(p, {"solution.cu": '#include "transpose.h"\n'})
    assert v.passed is False


def test_sanitizer_gate_on_reference() -> None:
    p = _bench_problem("reduce-sum")
    v = cudaenv.grade(p, p.solution, sanitizer=True)
    assert v.passed is True, v.reason
    assert v.stages["sanitizer"].status == "ok"
