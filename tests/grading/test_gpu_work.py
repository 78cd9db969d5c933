"""The work ran on the GPU, judged from the profiler's activity in each solution call
(cudaenv.grading.gpu_work): decisions on injected profile records here; on a GPU, a real
profiled grade of a host-computed answer (marker gpu)."""

from __future__ import annotations

import json

import pytest

import cudaenv
from cudaenv.grading.gpu_work import (
    CALL_RANGE,
    CallActivity,
    Watch,
    call_activities,
    judge_calls,
    judge_report,
)
from cudaenv.grading.profiler.profile import ProfileData
from cudaenv.problems import load_suite
from cudaenv.toolkit import has_gpu

NONCE = "n0nce"


def _profile(*ranges: dict) -> dict:
    return {"version": 1, "nonce": NONCE, "ranges": list(ranges)}


def _call(kernels: int, kernel_ns: int = 5000, count: int = 1, name: str = CALL_RANGE) -> dict:
    return {"name": name, "start_ns": 10, "end_ns": 90, "kernel_count": kernels,
            "kernel_ns": kernel_ns, "count": count}  # fmt: skip


def test_calls_that_ran_kernels_pass() -> None:
    calls = call_activities(ProfileData.model_validate(_profile(_call(1), _call(3))))
    assert [c.kernels for c in calls] == [1, 3]
    assert judge_calls(calls) == []


def test_a_call_without_a_kernel_fails() -> None:
    profile = ProfileData.model_validate(
        _profile(_call(2), _call(0), _call("x" and 1, name="other"))
    )
    assert judge_calls(call_activities(profile)) == ["call 1 ran no kernel on the GPU"]


def test_no_call_range_at_all_fails() -> None:
    profile = ProfileData.model_validate(_profile(_call(4, name="bench_region")))
    assert judge_calls(call_activities(profile)) == [
        "no call of the solution was seen (no NVTX range named cudaenv_call)"
    ]


def test_aggregated_ranges_still_show_fewer_kernels_than_calls() -> None:
    fine = call_activities(ProfileData.model_validate(_profile(_call(5, count=4))))
    short = call_activities(ProfileData.model_validate(_profile(_call(3, count=4))))
    assert len(fine) == 4 and judge_calls(fine) == []
    assert judge_calls(short) == [f"call {k} ran no kernel on the GPU" for k in range(4)]


def test_inputs_copied_back_to_the_host_fail() -> None:
    calls = [CallActivity(kernels=1, kernel_ns=900, d2h_bytes=4096)]
    (why,) = judge_calls(calls, input_bytes=4096)
    assert why.startswith("call 0 copied 4096 bytes back to the host")
    assert (
        judge_calls([CallActivity(kernels=1, kernel_ns=900, d2h_bytes=64)], input_bytes=4096) == []
    )
    # copies the profile does not attribute to ranges decide nothing
    assert judge_calls([CallActivity(kernels=1, kernel_ns=900)], input_bytes=4096) == []


def test_kernel_time_far_below_the_declared_work_fails() -> None:
    need = 1_000_000.0  # ns the declared work takes at the device's peaks
    assert judge_calls([CallActivity(kernels=1, kernel_ns=200_000)], min_kernel_ns=need) == []
    (why,) = judge_calls([CallActivity(kernels=1, kernel_ns=3_000)], min_kernel_ns=need)
    assert "far below the 1000000 ns its declared work needs" in why


def test_a_missing_forged_or_failed_report_is_the_solutions_failure() -> None:
    w = Watch(report=".cudaenv-x.json", nonce=NONCE)
    good = json.dumps(_profile(_call(1))).encode()
    assert judge_report(good, w) == []
    assert judge_report(None, w) == [
        "the profiler wrote no report of the run (the work on the GPU is unproven)"
    ]
    forged = json.dumps({**_profile(_call(1)), "nonce": "guess"}).encode()
    assert "wrong nonce" in judge_report(forged, w)[0]
    no_kernel = json.dumps(_profile(_call(0))).encode()
    assert judge_report(no_kernel, w) == ["call 0 ran no kernel on the GPU"]


HOST_ADD = """\
import numpy as np
from numba import cuda


@cuda.jit
def _touch(out):
    pass


def vector_add(a, b, out):
    host_a = a if isinstance(a, np.ndarray) else a.copy_to_host()
    host_b = b if isinstance(b, np.ndarray) else b.copy_to_host()
    total = host_a + host_b
    if isinstance(out, np.ndarray):
        out[...] = total
    else:
        out.copy_to_device(total)
"""


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU visible (nvidia-smi found none)")
def test_on_a_gpu_a_host_computed_answer_fails_and_the_reference_passes() -> None:
    """The answer is right (the checker passes it) but no call ran a kernel."""
    problem = load_suite("builtin")["py-vector-add"]
    assert problem.solution is not None
    ref = cudaenv.grade(problem, problem.solution, test_cache=False)
    assert ref.passed is True, ref
    host = cudaenv.grade(problem, {"solution.py": HOST_ADD}, test_cache=False)
    assert host.passed is False and host.reason.startswith("test failed: work not on the GPU"), host
