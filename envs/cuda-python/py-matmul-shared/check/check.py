"""py-matmul-shared's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). C = A @ B in float32, against a float64 reference."""

import numpy as np
from cudaenv_check import Case, close, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes
RTOL = 1e-5  # of sum_k |A[i,k] * B[k,j]| (see check)

# (M, K, N): C is M x N, A is M x K, B is K x N
TESTS = [(1, 1, 1), (17, 5, 33), (16, 16, 16), (40, 50, 24), (3, 0, 4), (0, 4, 5)]
LARGE = [(257, 129, 511), (1000, 1000, 1000), (64, 3000, 33), (1, 2048, 1500)]


def matrices(rng, M, K, N):
    A = rng.uniform(-1.0, 1.0, (M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, (K, N)).astype(np.float32)
    return {"A": A, "B": B}


def perf_cases(rng):
    M = K = N = 32 if SIM else 2048
    iters = 2 if SIM else 10
    return [Case("perf", {**matrices(rng, M, K, N), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    shapes = TESTS + ([] if SIM else LARGE)
    return [Case(f"m{M}-k{K}-n{N}", matrices(rng, M, K, N)) for M, K, N in shapes]


def expect_c(got, ref, mag, what):
    """Within 1e-5 * sum_k |A_ik B_kj| of the float64 product: float32 accumulation in any
    order stays within a few 2^-24 units of that magnitude for these random-sign inputs (a
    NaN, the poison of an element never written, fails)."""
    return close(got, ref, what, tol=RTOL * mag)


def check(case, out):
    A, B = case["A"], case["B"]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref, mag = A64 @ B64, np.abs(A64) @ np.abs(B64)
    shape = (A.shape[0], B.shape[1])
    if case.name == "perf":
        outs = [f"C{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_C", "device_C"]
    found = [
        m for name in outs for m in expect_c(out.array(name, np.float32, shape), ref, mag, name)
    ]
    if case.name != "perf":  # the host inputs must come back unchanged
        found += exact(out.array("host_A", np.float32, A.shape), A, "A (modified by the call)")
        found += exact(out.array("host_B", np.float32, B.shape), B, "B (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
