"""cublas-batched-gemm's checker: draws every run's matrices and decides on what the runner
wrote (trusted: it never sees solution code): each C_b = A_b B_b (column-major, packed) within
2e-6 sum_p |A_b(i,p) B_b(p,j)| of the exact product; nothing past the batch written; A and B
unchanged; the handle's settings as found."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

# Any FP32 summation order stays within a few float32 ulps of sum_p |a_ip b_pj| (>10x
# headroom); TF32/FP16 math (error ~1e-5 of it) is rejected.
RTOL_OF_MAGNITUDE = 2e-6

# m, n, k, batch
TESTS = [
    (1, 1, 1, 1),
    (3, 5, 7, 10),
    (16, 16, 16, 100),
    (32, 20, 48, 37),
    (64, 64, 64, 9),
    (5, 100, 3, 3),
    (17, 1, 33, 250),
    (8, 8, 8, 0),
    (96, 72, 130, 2),
]


def matrices(rng, m, n, k, batch):
    A = rng.uniform(-1.0, 1.0, batch * m * k).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, batch * k * n).astype(np.float32)
    sizes = {"m": np.int32(m), "n": np.int32(n), "k": np.int32(k), "batch": np.int32(batch)}
    return {"A": A, "B": B, **sizes}


def perf_cases(rng):
    m, n, k = 32, 32, 32
    batch = 8192
    iters = 5  # the same A and B every call, each call its own C
    warmup = 3
    inputs = matrices(rng, m, n, k, batch)
    return [Case("perf", {**inputs, "iters": np.int32(iters), "warmup": np.int32(warmup)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [Case(f"m{m}-n{n}-k{k}-b{b}", matrices(rng, m, n, k, b)) for m, n, k, b in TESTS]


def product(case):
    """(exact C, sum |products|), both packed like C: batch x n x m (column-major m x n)."""
    m, n, k, batch = (int(case[key]) for key in ("m", "n", "k", "batch"))
    # column-major A_b (m x k) read row-major is A_b^T (k x m): C_b^T = B_b^T A_b^T
    At = case["A"].astype(np.float64).reshape(batch, k, m)
    Bt = case["B"].astype(np.float64).reshape(batch, n, k)
    want = np.matmul(Bt, At).reshape(-1)
    magnitude = np.matmul(np.abs(Bt), np.abs(At)).reshape(-1)
    return want, magnitude


def check(case, out):
    want, magnitude = product(case)
    tol = RTOL_OF_MAGNITUDE * magnitude
    if case.name == "perf":
        return [
            msg
            for it in range(int(case["iters"]))
            for msg in close(out.array(f"C{it}", np.float32, want.shape), want, f"C{it}", tol=tol)
        ]
    guard_size = int(case["m"]) * int(case["n"])
    C = out.array("C", np.float32, (want.size + guard_size,))
    found = close(C[: want.size], want, "C", tol=tol) + guard(C[want.size :], "C past the batch")
    for name in ("A", "B"):
        got = out.array(name, np.float32, case[name].shape)
        found += exact(got.view(np.uint32), case[name].view(np.uint32), f"{name} (modified)")
    before = out.array("settings_before", np.int32, (3,))
    after = out.array("settings_after", np.int32, (3,))
    return found + exact(after, before, "the handle's (pointer mode, math mode, default stream)")


if __name__ == "__main__":
    main(cases, check)
