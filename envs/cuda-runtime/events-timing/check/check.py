"""events-timing's checker: draws the phase lengths and judges what the runner saw (trusted:
it never sees solution code). time_two_phases(c1, c2) launches the runner's busy kernel for
c1 then c2 cycles on one stream, times them with CUDA events and returns only once both ran.

What it takes from the runner (only the solution's process can observe it): the SM clock it
converted milliseconds to cycles with, the cycles it asked for, its log of the solution's
launch_busy_kernel calls (count, cycles, same stream), whether both kernels had finished when
the call returned, the three times returned, the host's wall time of the call (the runner's
steady clock around it) and cudaGetLastError() after it. What it decides itself: the phase
lengths, and that the times are plausible for the cycles asked (no faster than the peak clock
allows), in the ratio of the cycles, with total_ms spanning both phases and within the wall
time of the call.
"""

import numpy as np
from cudaenv_check import Case, main

# (ms_first, ms_second) at the peak clock; "random" draws both per run
TESTS = {"10-30": (10.0, 30.0), "40-8": (40.0, 8.0), "5-5": (5.0, 5.0), "2-24": (2.0, 24.0)}
RATIO = 1.5  # second/first may differ from c2/c1 by this factor


def cases(stage, rng):
    pairs = {**TESTS, "random": tuple(np.round(rng.uniform(2.0, 30.0, 2), 3))}
    return [
        Case(name, {"ms_first": np.float64(a), "ms_second": np.float64(b)})
        for name, (a, b) in pairs.items()
    ]


def _scalar(out, name, dtype):
    return out.array(name, dtype, ()).item()


def check(case, out):
    khz = _scalar(out, "clock_khz", np.float64)
    if not khz > 0:
        return [f"the runner's clock rate is {khz!r}"]
    want = [int(float(case["ms_first"]) * khz), int(float(case["ms_second"]) * khz)]
    asked = out.array("asked_cycles", np.int64, (2,)).tolist()
    if asked != want:
        return [f"the runner asked for {asked} cycles, not {want} (ms x clock)"]
    c1, c2 = asked
    found = []
    if (pending := _scalar(out, "pending", np.int32)) != 0:
        found.append(f"a CUDA error was left pending after the call (cudaError_t {pending})")
    if (launches := _scalar(out, "launches", np.int32)) != 2:
        return [*found, f"launch_busy_kernel was called {launches} times, not exactly twice"]
    if out.array("launched_cycles", np.int64, (2,)).tolist() != asked:
        found.append("busy kernels launched in the wrong order or with wrong cycles")
    if _scalar(out, "same_stream", np.int32) != 1:
        found.append("both busy kernels must go to the same stream")
    if out.array("done", np.int32, (2,)).tolist() != [1, 1]:
        found.append("the function returned before the busy kernels finished")
    first, second, total = (float(t) for t in out.array("times_ms", np.float32, (3,)))
    host = _scalar(out, "host_ms", np.float64)
    return found + plausible(first, second, total, host, c1 / khz, c2 / khz, c2 / c1)


def plausible(first, second, total, host, min1, min2, ratio):
    """The returned times against the cycles asked: a kernel spinning c cycles cannot finish
    faster than c / peak clock (20% slack for clock reporting); the upper bound is loose
    (throttled clocks, launch gaps); total spans both kernels (event resolution ~0.5 us,
    small gaps between launches); no GPU interval of the call outlasts the call."""
    times = f"(first={first:.4f} second={second:.4f} total={total:.4f} host={host:.4f} ms)"
    if not all(np.isfinite([first, second, total])):
        return [f"non-finite time {times}"]
    found = []
    if not 0.8 * min1 <= first <= 20.0 * min1 + 20.0:
        found.append(f"first_ms implausible for {min1:.3f} ms of cycles {times}")
    if not 0.8 * min2 <= second <= 20.0 * min2 + 20.0:
        found.append(f"second_ms implausible for {min2:.3f} ms of cycles {times}")
    got = second / first if first > 0 else float("inf")
    if not ratio / RATIO <= got <= ratio * RATIO:
        found.append(f"second/first = {got:.3f} does not match the work ratio {ratio:.3f}")
    both = first + second
    if not 0.97 * both - 0.01 <= total <= 1.10 * both + 0.5:
        found.append(f"total_ms inconsistent with first_ms + second_ms {times}")
    if total > host + 0.5:
        found.append(f"total_ms exceeds the host time of the call {times}")
    return found


if __name__ == "__main__":
    main(cases, check)
