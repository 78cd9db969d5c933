"""The work runs on the GPU: judged by what ran, from the profiler's activity in each call.

Why: a name rule ("no NumPy on the data") is a deny-list; an answer computed on the host with
an operator nobody listed, plus a do-nothing kernel, passes any such list. A split runner wraps
every call of the solution in an NVTX range named :data:`CALL_RANGE`; on a GPU the grader
profiles the runner's test run (the CUPTI injection of :mod:`cudaenv.grading.profiler`) and,
once the checker has passed the outputs, judges each call's activity:

- no call range at all: the solution's calls were hidden (or the runner marks none): fail;
- a call that ran no kernel: the work was done elsewhere: fail;
- a call whose device-to-host copies reach its inputs' size: the inputs went back to the host
  to be worked on there: fail (needs copies attributed to ranges: :attr:`CallActivity.d2h_bytes`
  is None while the profiler reports copies per kind for the whole run, and the rule waits);
- a call (or the timed region) whose kernel time is far below what the declared
  ``metadata.work`` needs at the device's peaks (:data:`FAR_BELOW` of the physics floor): the
  kernels cannot have done the work. The benchmark's timed region already meets this rule as
  the physics floor (:func:`cudaenv.grading.speed_of_light.assess`).

The profiler lives in the runner's process, like the benchmark's: it is trusted there (its
report carries a nonce the program never sees), a stated assumption of the trust boundary.
On numba-cuda's simulator nothing runs on a GPU and nothing here applies (docs/AUTHORING.md
says what the simulator can and cannot show).
"""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from cudaenv.errors import GradingError
from cudaenv.grading.profiler.profile import ProfileData
from cudaenv.problems.model import KernelsTiming
from cudaenv.sandbox import Sandbox

#: the NVTX range a runner puts around each call of the solution (cudaenv_runner.h, pyrunner)
CALL_RANGE = "cudaenv_call"
#: below this fraction of the time the declared work needs at the device's peaks, kernels
#: cannot have done it (the physics floor is already a bound no correct run beats)
FAR_BELOW = 0.1


class CallActivity(BaseModel):
    """What the profiler saw inside one call of the solution."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kernels: int
    kernel_ns: int
    d2h_bytes: int | None = None  # None: copies are not attributed to ranges


def call_activities(profile: ProfileData) -> list[CallActivity]:
    """Each call range of the run, in order. A profile that aggregated its ranges (one record
    of ``count`` calls) gives ``count`` calls of the average: fewer kernels than calls still
    shows a call without one; a call without one beside calls with several does not show."""
    calls = []
    for r in profile.ranges:
        if r.name == CALL_RANGE and r.count:
            each = CallActivity(kernels=r.kernel_count // r.count, kernel_ns=r.kernel_ns // r.count)
            calls += [each] * r.count
    return calls


def judge_calls(
    calls: list[CallActivity],
    *,
    input_bytes: int | None = None,
    min_kernel_ns: float | None = None,
) -> list[str]:
    """Why the calls did not do their work on the GPU ([] when they did); see the module
    docstring. ``input_bytes``: the size of a call's inputs; ``min_kernel_ns``: the kernel
    time the declared work needs per call at the device's peaks."""
    if not calls:
        return ["no call of the solution was seen (no NVTX range named cudaenv_call)"]
    failures = []
    for k, call in enumerate(calls):
        if call.kernels == 0:
            failures.append(f"call {k} ran no kernel on the GPU")
        elif input_bytes and call.d2h_bytes is not None and call.d2h_bytes >= input_bytes:
            failures.append(
                f"call {k} copied {call.d2h_bytes} bytes back to the host (its inputs are "
                f"{input_bytes} bytes): the work was not done on the GPU"
            )
        elif min_kernel_ns and call.kernel_ns < FAR_BELOW * min_kernel_ns:
            failures.append(
                f"call {k}'s kernels ran {call.kernel_ns} ns, far below the "
                f"{min_kernel_ns:.0f} ns its declared work needs"
            )
    return failures


class Watch(BaseModel):
    """The profiler on one run: where its report goes and the nonce that proves it ours."""

    report: str
    nonce: str


def watch(box: Sandbox) -> tuple[Watch, dict[str, str]]:
    """Profile the next run in ``box``: the watch and the variables the run gets."""
    from cudaenv.grading.timing import profiler_env_for

    w = Watch(report=f".cudaenv-{secrets.token_hex(8)}.json", nonce=secrets.token_hex(16))
    return w, profiler_env_for(box, f"./{w.report}", w.nonce, KernelsTiming())


def judge_report(raw: bytes | None, w: Watch) -> list[str]:
    """The calls' verdict from the run's raw report (None: it wrote none)."""
    from cudaenv.grading.profiler import load_profile

    if raw is None:
        return ["the profiler wrote no report of the run (the work on the GPU is unproven)"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "profile.json"
        path.write_bytes(raw)
        try:
            profile = load_profile(path, w.nonce)
        except GradingError as exc:
            return [f"the profiler's report was rejected: {exc}"]
    return judge_calls(call_activities(profile))


__all__ = ["CALL_RANGE", "FAR_BELOW", "CallActivity", "call_activities", "judge_calls", "watch"]
