"""cublas-gemv-rows' checker: draws every run's inputs and decides on what the runner wrote
(trusted: it never sees solution code): y = A x for a row-major A, each y[i] within
1e-5 sum_j |A[i, j] x[j]| of the exact value; nothing past y written; A and x unchanged; the
handle's settings as found."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 32  # poisoned floats after y: the solution must not write them
# float32 accumulation in any order stays far below this (a few 2^-24 of the magnitude for
# random-sign data); the transposed product (the wrong cuBLAS flag) is nowhere near it
RTOL_OF_MAGNITUDE = 1e-5

# rows, cols
TESTS = [(0, 5), (5, 0), (1, 1), (1, 1000), (1000, 1), (333, 517), (64, 4096), (4099, 257)]
TESTS += [(2048, 3000)]


def draw(rng, rows, cols):
    A = rng.uniform(-1.0, 1.0, rows * cols).astype(np.float32)
    x = rng.uniform(-2.0, 2.0, cols).astype(np.float32)
    return {"A": A, "x": x, "rows": np.int32(rows), "cols": np.int32(cols)}


def perf_cases(rng):
    rows = 8192
    cols = 8192
    iters = 10  # the same A and x every call, each call its own y
    warmup = 3
    inputs = {**draw(rng, rows, cols), "iters": np.int32(iters), "warmup": np.int32(warmup)}
    return [Case("perf", inputs)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [
        Case(f"r{rows}-c{cols}", {**draw(rng, rows, cols), "guard": np.int32(GUARD)})
        for rows, cols in TESTS
    ]


def product(case):
    """(exact y, sum_j |A_ij x_j|) in float64, A read row-major."""
    rows, cols = int(case["rows"]), int(case["cols"])
    A = case["A"].reshape(rows, cols).astype(np.float64)
    x = case["x"].astype(np.float64)
    return A @ x, np.abs(A) @ np.abs(x)


def check(case, out):
    want, magnitude = product(case)
    tol = RTOL_OF_MAGNITUDE * magnitude
    rows = want.size
    if case.name == "perf":
        return [
            msg
            for it in range(int(case["iters"]))
            for msg in close(out.array(f"y{it}", np.float32, (rows,)), want, f"y{it}", tol=tol)
        ]
    y = out.array("y", np.float32, (rows + int(case["guard"]),))
    found = close(y[:rows], want, "y", tol=tol) + guard(y[rows:], "y past the end")
    for name in ("A", "x"):
        got = out.array(name, np.float32, case[name].shape)
        found += exact(got.view(np.uint32), case[name].view(np.uint32), f"{name} (modified)")
    before = out.array("settings_before", np.int32, (3,))
    after = out.array("settings_after", np.int32, (3,))
    return found + exact(after, before, "the handle's (pointer mode, math mode, default stream)")


if __name__ == "__main__":
    main(cases, check)
