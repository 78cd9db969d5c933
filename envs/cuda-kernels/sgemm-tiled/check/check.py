"""sgemm-tiled's checker: draws every run's matrices and decides on the products the runner
wrote (trusted: it never sees solution code). C = A * B, all row-major, FP32.

Every element of every output is checked, the benchmark's timed products included (no sample a
solution could aim at): the exact products A*B and B*A are two float64 matrix products of
4096^3 and their error bounds two float32 ones of |A| and |B|, seconds of BLAS per round."""

import numpy as np
from cudaenv_check import Case, close, guard, main

GUARD = 64  # poisoned floats after C: the solution must not write them
# |C - exact| <= 4e-6 * sum_k |A[i][k] * B[k][j]| (+ 1e-30). Plain FP32 FMA accumulation in
# any order is typically ~1e-7 of that scale, far inside it. TF32/BF16/FP16 inputs carry a
# relative rounding error of 2^-11 or worse per product, which exceeds the bound at small K
# (the tests include K = 1..7): full FP32 is required.
RTOL = 4e-6
# M, N, K: none a multiple of any tile size needed, from 1 x 1 x 1 to 1024^3
SHAPES = [
    (1, 1, 1), (1, 1, 2), (2, 3, 1), (3, 5, 7), (16, 16, 16), (17, 33, 5), (64, 64, 64),
    (65, 63, 3), (129, 250, 77), (1000, 1, 300), (1, 1000, 300), (513, 257, 1031),
    (255, 257, 2049), (5000, 37, 11), (37, 5000, 11), (1024, 1024, 1024),
]  # fmt: skip
INTS = (300, 200, 500)  # small integers: every partial sum exact in float


def matrix(rng, rows, cols, small_ints=False):
    if small_ints:
        return rng.integers(-4, 4, (rows, cols), endpoint=True).astype(np.float32)
    return rng.uniform(-1.0, 1.0, (rows, cols)).astype(np.float32)


def case(name, rng, m, n, k, small_ints=False):
    a, b = matrix(rng, m, k, small_ints), matrix(rng, k, n, small_ints)
    return Case(name, {"A": a, "B": b, "guard": np.int32(GUARD)})


def perf_case(rng, S, R):
    """R timed calls on S x S matrices: even calls compute A * B, odd calls B * A."""
    a, b = matrix(rng, S, S), matrix(rng, S, S)
    return Case("perf", {"A": a, "B": b, "calls": np.int32(R), "guard": np.int32(GUARD)})


def perf_cases(rng):
    S = 4096
    R = 4  # timed calls, each with its own C
    return [perf_case(rng, S, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case(f"{m}x{n}x{k}", rng, m, n, k) for m, n, k in SHAPES]
    m, n, k = INTS
    return [*out, case(f"{m}x{n}x{k}-ints", rng, m, n, k, small_ints=True)]


def product(x, y):
    """The exact product in float64 and the bound's scale sum_k |x[i][k] * y[k][j]|, a sum of
    non-negative terms, in float32 (within K * 2^-24 of itself: the bound moves by under 0.03%
    at K = 4096, and the float32 product costs half the float64 one)."""
    scale = (np.abs(x) @ np.abs(y)).astype(np.float64)
    return x.astype(np.float64) @ y.astype(np.float64), scale


def expect_c(got, want, what):
    """got's M*N entries within the bound of the exact product, then an intact guard."""
    exact, scale = want
    n = exact.size
    tol = RTOL * scale + 1e-30
    found = close(got[:n].reshape(exact.shape), exact, what, tol=tol)
    return found + guard(got[n:], f"{what} past the end")


def check(case, out):
    a, b, g = case["A"], case["B"], int(case["guard"])
    if case.name != "perf":
        want = product(a, b)
        return expect_c(out.array("C", np.float32, (want[0].size + g,)), want, "C")
    found, wants = [], {}
    for r in range(int(case["calls"])):
        got = out.array(f"C{r}", np.float32, (a.shape[0] * b.shape[1] + g,))
        if r % 2 not in wants:  # each product once, when its first output is there
            wants[r % 2] = product(a, b) if r % 2 == 0 else product(b, a)
        found += expect_c(got, wants[r % 2], f"C{r}")
    return found


if __name__ == "__main__":
    main(cases, check)
