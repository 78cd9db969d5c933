"""Speed of light through ``grade()``: a CPU-timed problem whose "device" is described by a
user peaks file (``$CUDAENV_DEVICE_PEAKS``), so the grader's path from samples to
``sol_ms``/``sol_fraction`` and the physics floor runs here. Timed-run durations are scripted
(``Boxes``): the assertions are the grader's arithmetic on known samples."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cudaenv.grading import rewards
from cudaenv.grading.timing import record_timings
from cudaenv.grading.verdict import ClockReading, Verdict
from cudaenv.problems.model import Problem
from tests.grading.test_benchmark_cpu import Boxes, cpu_problem, grade

GB = 10**9
DEVICE = {  # 1 GB/s, no L2 to speak of: the declared 1 GB takes 1000 ms at best
    "name": "test cpu",
    "match": [r"^CPU\b"],
    **{f"{d}_tflops": 1.0 for d in ("fp64", "fp32", "tf32", "fp16", "bf16")},
    "mem_gbs": 1.0,
    "l2_mib": 0.001,
    "host_gbs": 1.0,
}


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Problem:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text(yaml.safe_dump({"devices": [DEVICE]}))
    monkeypatch.setenv("CUDAENV_DEVICE_PEAKS", str(peaks))
    metadata = {
        "difficulty": "easy",
        "tags": ["cpu"],
        "requires_gpu": False,
        "work": {"flops": 0, "bytes": GB, "dtype": "int32"},
    }
    return cpu_problem(tmp_path / "suite", "cpu-add-sol", metadata=metadata)


def test_verdict_carries_the_speed_of_light(problem: Problem) -> None:
    v = grade(problem, Boxes(problem, [2000.0] * 3, [4000.0] * 3), mode="optimize", rounds=3)
    assert v.passed is True, v.reason
    assert v.sol_device == "test cpu"
    assert v.sol_ms == pytest.approx(1000.0, rel=1e-6)
    assert v.sol_fraction == pytest.approx(0.5, rel=1e-6)
    assert v.suspected_hack == []
    # SOL-ExecBench's form: 1 / (1 + (T - T_sol) / (T_base - T_sol)) = 1 / (1 + 1000/3000)
    assert rewards.REWARDS["sol"](v) == pytest.approx(0.75, rel=1e-6)


def test_a_time_below_the_physics_floor_is_a_suspected_hack(problem: Problem) -> None:
    v = grade(problem, Boxes(problem, [10.0] * 3, [4000.0] * 3), mode="optimize", rounds=3)
    assert v.passed is False and v.failure == "agent"
    assert any("impossible timing" in s for s in v.suspected_hack), v.suspected_hack
    for name in ("binary", "speedup", "sol"):
        assert rewards.REWARDS[name](v) == 0.0, name


def test_throttled_samples_are_dropped_from_the_medians_and_the_speedup() -> None:
    hot = ClockReading(sm_mhz_min=900, sm_mhz_max=1980, throttle_reasons=0x40, polls=3)
    cool = ClockReading(sm_mhz_min=1980, sm_mhz_max=1980, polls=3)
    v = Verdict(task_id="t")
    record_timings(v, [10.0, 30.0, 10.0], [40.0, 40.0], None, "process", [cool, hot, cool],
                   [cool, cool])  # fmt: skip
    assert v.solution_timing is not None
    assert v.solution_timing.samples_ms == [10.0, 10.0]
    assert v.solution_timing.throttled_dropped == 1
    assert v.solution_timing.clocks == [cool, hot, cool]  # every reading kept on record
    assert v.speedup == pytest.approx(4.0)
