"""cublas-sgemm-bias' checker: draws every run's inputs and decides on what the runner wrote
(trusted: it never sees solution code): C = alpha A B + bias (column-major, the bias along the
rows), each element within 2e-6 (|alpha| sum_p |A(i,p) B(p,j)| + |bias[i]|) of the exact
value, every element of every timed call's C included; nothing past C written; A, B and bias
unchanged; the handle's settings as found."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after C: the solution must not write them
# A float32 GEMM (any summation order) is within a few float32 ulps of sum_p |a_ip b_pj|; 2e-6
# of that magnitude leaves >10x headroom for FP32 while rejecting reduced-precision
# (TF32/FP16) math, whose error is ~1e-5 of it.
RTOL_OF_MAGNITUDE = 2e-6

# m, n, k, alpha
TESTS = [
    (1, 1, 1, 1.0),
    (37, 53, 29, 1.5),
    (128, 64, 256, -0.75),
    (200, 1, 300, 1.0),
    (1, 300, 17, 2.0),
    (65, 67, 0, 1.0),  # k == 0: C is the broadcast bias
    (96, 80, 40, 0.0),  # alpha == 0: likewise
    (513, 385, 641, 0.5),
]


def draw(rng, m, n, k, alpha):
    A = rng.uniform(-1.0, 1.0, m * k).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, k * n).astype(np.float32)
    bias = rng.uniform(-2.0, 2.0, m).astype(np.float32)
    sizes = {"m": np.int32(m), "n": np.int32(n), "k": np.int32(k), "alpha": np.float32(alpha)}
    return {"A": A, "B": B, "bias": bias, **sizes}


def perf_cases(rng):
    m, n, k = 4096, 4096, 4096
    iters = 5  # the same inputs every call, each call its own C
    warmup = 3
    inputs = draw(rng, m, n, k, 0.5)
    return [Case("perf", {**inputs, "iters": np.int32(iters), "warmup": np.int32(warmup)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [
        Case(f"m{m}-n{n}-k{k}", {**draw(rng, m, n, k, alpha), "guard": np.int32(GUARD)})
        for m, n, k, alpha in TESTS
    ]


def expected(case):
    """(exact C, its tolerance), both packed like C (column-major: n x m read row-major)."""
    m, n, k = int(case["m"]), int(case["n"]), int(case["k"])
    alpha = np.float64(case["alpha"])
    At = case["A"].astype(np.float64).reshape(k, m)  # column-major A (m x k) is A^T row-major
    Bt = case["B"].astype(np.float64).reshape(n, k)
    bias = case["bias"].astype(np.float64)
    want = alpha * (Bt @ At) + bias  # (A B)^T = B^T A^T, the bias along each column of it
    magnitude = abs(alpha) * (np.abs(Bt) @ np.abs(At)) + np.abs(bias)
    return want.reshape(-1), RTOL_OF_MAGNITUDE * magnitude.reshape(-1)


def check(case, out):
    want, tol = expected(case)
    if case.name == "perf":
        return [
            msg
            for it in range(int(case["iters"]))
            for msg in close(out.array(f"C{it}", np.float32, want.shape), want, f"C{it}", tol=tol)
        ]
    C = out.array("C", np.float32, (want.size + int(case["guard"]),))
    found = close(C[: want.size], want, "C", tol=tol) + guard(C[want.size :], "C past the end")
    for name in ("A", "B", "bias"):
        got = out.array(name, np.float32, case[name].shape)
        found += exact(got.view(np.uint32), case[name].view(np.uint32), f"{name} (modified)")
    before = out.array("settings_before", np.int32, (3,))
    after = out.array("settings_after", np.int32, (3,))
    return found + exact(after, before, "the handle's (pointer mode, math mode, default stream)")


if __name__ == "__main__":
    main(cases, check)
