"""GPU paths of the grader: tests, interleaved benchmark timing through the profiler,
speedup against the baseline, and the sanitizer gate. Skipped without a GPU."""

from __future__ import annotations

import pytest

import cudaenv
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
def test_reference_beats_baseline_with_region_timing(task_id: str) -> None:
    p = _bench_problem(task_id)
    v = cudaenv.grade(p, p.solution, mode="optimize", rounds=3, force_baseline=True)
    assert v.passed is True, v.reason
    assert v.stages["benchmark"].status == "ok", v.stages["benchmark"].reason
    assert v.solution_ms and v.solution_ms > 0 and v.baseline_ms and v.baseline_ms > 0
    assert v.speedup and v.speedup > 1.0
    assert v.speedup_ci is not None and v.speedup_ci[0] <= v.speedup <= v.speedup_ci[1] * 1.5
    assert len(v.solution_timing.samples_ms) == 3


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
