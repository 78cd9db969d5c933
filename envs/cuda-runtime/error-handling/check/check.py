"""error-handling's checker: draws every run's x and y and decides on what the runner saw
(trusted: it never sees solution code). checked_axpy(a, x, y, n, grid, block) must return the
status the task's rules give, leave no CUDA error pending, update y[:n] = a * x + y exactly
once when it returns LAUNCH_OK and leave y untouched otherwise.

The checker decides the expected status from the launch shape alone: the limits it needs are
the same on every device the problem runs on (compute capability 3.0 and later, CUDA C++
Programming Guide, "Technical Specifications per Compute Capability"), so no value the runner
reports about the device is trusted. From the runner it takes what only the solution's process
can see: the returned status, cudaGetLastError() right after the call, the result of the
cudaDeviceSynchronize() after it, whether its own stale error was pending before the call, and y.
"""

import numpy as np
from cudaenv_check import Case, close, exact, main

STATUS = ["LAUNCH_OK", "LAUNCH_NULL_POINTER", "LAUNCH_EMPTY_CONFIG", "LAUNCH_BLOCK_TOO_LARGE"]
STATUS += ["LAUNCH_GRID_TOO_LARGE", "LAUNCH_OTHER_ERROR"]
OK, NULL, EMPTY, BLOCK, GRID = range(5)
MAX_THREADS = 1024  # threads per block
MAX_BLOCK = (1024, 1024, 64)  # block dimensions
MAX_GRID = (2**31 - 1, 65535, 65535)  # grid dimensions
TAIL = 1024  # elements after y[:n] the call must leave alone (more when a launch has more threads)
ATOL = 1e-6  # see expect_y
BIG = (1 << 21) - 5

# name, a, n, grid, block, flags (null_x, null_y, stale: an earlier error left pending)
TESTS = [
    ("1d-exact-fit", 2.5, 1024, (4, 1, 1), (256, 1, 1), ""),
    ("1d-ragged", -1.25, 1000, (4, 1, 1), (256, 1, 1), ""),
    ("grid-smaller-than-n", 0.5, 100003, (3, 1, 1), (128, 1, 1), ""),
    ("3d-grid-and-block", 3.0, 100003, (3, 2, 2), (8, 4, 2), ""),
    ("3d-large-n", -2.0, BIG, (7, 5, 3), (16, 4, 4), ""),
    ("max-block", 1.5, 77777, (2, 1, 1), (MAX_THREADS, 1, 1), ""),
    ("max-block-z", 1.75, 777, (1, 1, 1), (1, 1, MAX_BLOCK[2]), ""),
    ("more-threads-than-n", 4.0, 5, (64, 1, 1), (256, 1, 1), ""),
    ("single-element", -3.5, 1, (1, 1, 1), (1, 1, 1), ""),
    ("n-0", 2.0, 0, (8, 1, 1), (128, 1, 1), ""),
    ("n-0-null-pointers", 2.0, 0, (8, 1, 1), (128, 1, 1), "xy"),
    ("stale-error-before-valid-launch", 1.25, 50000, (16, 1, 1), (256, 1, 1), "s"),
    ("null-x", 2.0, 100, (1, 1, 1), (128, 1, 1), "x"),
    ("null-y", 2.0, 100, (1, 1, 1), (128, 1, 1), "y"),
    ("null-beats-empty-grid", 2.0, 100, (0, 1, 1), (128, 1, 1), "xy"),
    ("grid-x-0", 2.0, 100, (0, 1, 1), (128, 1, 1), ""),
    ("grid-z-0", 2.0, 100, (1, 1, 0), (128, 1, 1), ""),
    ("block-y-0", 2.0, 100, (2, 1, 1), (32, 0, 1), ""),
    ("n-0-and-empty-grid", 2.0, 0, (0, 1, 1), (32, 1, 1), ""),
    ("empty-beats-oversized-block", 2.0, 100, (0, 1, 1), (2 * MAX_THREADS, 1, 1), ""),
    ("stale-error-before-empty-grid", 2.0, 100, (0, 1, 1), (64, 1, 1), "s"),
    ("block-x-too-large", 2.0, 100, (1, 1, 1), (MAX_THREADS + 1, 1, 1), ""),
    ("block-product-too-large", 2.0, 100, (1, 1, 1), (32, 32, 2), ""),
    ("block-z-too-large", 2.0, 100, (1, 1, 1), (1, 1, MAX_BLOCK[2] + 1), ""),
    ("block-beats-grid", 2.0, 100, (1, MAX_GRID[1] + 1, 1), (2 * MAX_THREADS, 1, 1), ""),
    ("grid-y-too-large", 2.0, 100, (1, MAX_GRID[1] + 1, 1), (32, 1, 1), ""),
    ("grid-z-too-large", 2.0, 100, (1, 1, MAX_GRID[2] + 1), (32, 1, 1), ""),
    ("stale-error-before-large-grid", 2.0, 100, (1, MAX_GRID[1] + 1, 1), (32, 1, 1), "s"),
    ("valid-after-failures", 0.75, 123457, (100, 1, 1), (96, 1, 1), ""),
]


def expected_status(n, grid, block, null_x, null_y):
    """The task's rules, in order (the first that applies wins)."""
    if n > 0 and (null_x or null_y):
        return NULL
    if 0 in grid or 0 in block:
        return EMPTY
    if any(b > m for b, m in zip(block, MAX_BLOCK)) or np.prod(block) > MAX_THREADS:
        return BLOCK
    if any(g > m for g, m in zip(grid, MAX_GRID)):
        return GRID
    return OK


def cases(stage, rng):
    made = []
    for name, a, n, grid, block, flags in TESTS:
        status = expected_status(n, grid, block, "x" in flags, "y" in flags)
        threads = int(np.prod(grid, dtype=np.int64) * np.prod(block, dtype=np.int64))
        tail = max(TAIL, threads) if status == OK else TAIL  # room for a kernel's stray writes
        inputs = {"a": np.float32(a), "n": np.int32(n)}
        inputs["grid"] = np.array(grid, np.uint32)
        inputs["block"] = np.array(block, np.uint32)
        for flag, key in (("x", "null_x"), ("y", "null_y"), ("s", "stale")):
            inputs[key] = np.int32(flag in flags)
        inputs["x"] = rng.uniform(-1.0, 1.0, n + tail).astype(np.float32)
        inputs["y"] = rng.uniform(-1.0, 1.0, n + tail).astype(np.float32)
        made.append(Case(name, inputs))
    return made


def status_name(code):
    return STATUS[code] if 0 <= code < len(STATUS) else f"<invalid value {code}>"


def expect_y(got, case, status):
    """LAUNCH_OK: y[:n] within 1e-6 of a * x + y (one float multiply-add of values in [-4, 4]
    rounds to well under that; a missed or doubled update is off by about |a x|) and the rest
    untouched; any error status: all of y untouched."""
    x, y, n = case["x"], case["y"], int(case["n"])
    if status != OK:
        return exact(got, y, "y (changed by a call that returned an error)")
    want = np.float64(case["a"]) * x[:n].astype(np.float64) + y[:n].astype(np.float64)
    found = close(got[:n], want, "y[:n]", atol=ATOL)
    return found + exact(got[n:], y[n:], "y past n (written)")


def check(case, out):
    n = int(case["n"])
    grid, block = tuple(case["grid"].tolist()), tuple(case["block"].tolist())
    status = expected_status(n, grid, block, bool(case["null_x"]), bool(case["null_y"]))
    found = []
    got = int(out.array("status", np.int32, ()))
    if got != status:
        found.append(f"returned {status_name(got)}, expected {status_name(status)}")
    if (pending := int(out.array("pending", np.int32, ()))) != 0:
        found.append(f"a CUDA error was left pending after the call (cudaError_t {pending})")
    if (synced := int(out.array("sync", np.int32, ()))) != 0:
        found.append(f"cudaDeviceSynchronize after the call failed (cudaError_t {synced})")
    if bool(case["stale"]) and int(out.array("stale_pending", np.int32, ())) != 1:
        found.append("the runner's stale error was not pending before the call")
    return found + expect_y(out.array("y", np.float32, case["y"].shape), case, status)


if __name__ == "__main__":
    main(cases, check)
