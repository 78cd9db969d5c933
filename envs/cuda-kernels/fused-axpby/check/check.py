"""fused-axpby's checker: draws every run's cases and decides on the z the runner wrote
(trusted: it never sees solution code). z = alpha * x + beta * y."""

import numpy as np
from cudaenv_check import Case, close, guard, main

GUARD = 64  # poisoned floats after each z: the solution must not write them
EPS = float(np.finfo(np.float32).eps)

# name, n, alpha, beta (None: drawn), x/y/z element offsets (misaligned pointers)
TESTS = [
    ("empty", 0, None, None, 0, 0, 0),
    ("single", 1, None, None, 0, 0, 0),
    ("tiny", 7, None, None, 0, 0, 0),
    ("block-plus-one", 257, None, None, 0, 0, 0),
    ("odd-size", 100003, None, None, 0, 0, 0),
    ("misaligned-same", 100005, None, None, 1, 1, 1),
    ("misaligned-mixed", 65539, None, None, 3, 2, 1),
    ("beta-zero", 4099, None, 0.0, 0, 0, 0),
    ("alpha-zero", 4101, 0.0, None, 2, 0, 2),
    ("large", (1 << 24) + 13, None, None, 1, 3, 2),  # past 65535 blocks of 256 threads
]


def vector(rng, count):
    return rng.uniform(-2.0, 2.0, count).astype(np.float32)


def scalar(rng, fixed):
    return np.float32(rng.uniform(-3.0, 3.0) if fixed is None else fixed)


def perf_cases(rng):
    N = 1 << 24
    R = 4  # timed calls, call r on the first N - 5r elements, each its own z
    sizes = np.array([N - 5 * r for r in range(R)], dtype=np.int32)
    alphas = np.array([scalar(rng, None) for _ in range(R)], dtype=np.float32)
    betas = np.array([scalar(rng, None) for _ in range(R)], dtype=np.float32)
    inputs = {"x": vector(rng, N), "y": vector(rng, N), "n": sizes, "alpha": alphas}
    return [Case("perf", {**inputs, "beta": betas, "guard": np.int32(GUARD)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, alpha, beta, xo, yo, zo in TESTS:
        extra = n + GUARD + 8  # room for the offsets
        inputs = {"x": vector(rng, extra), "y": vector(rng, extra), "n": np.int32(n)}
        inputs |= {"alpha": scalar(rng, alpha), "beta": scalar(rng, beta)}
        offsets = {"x_offset": np.int64(xo), "y_offset": np.int64(yo), "z_offset": np.int64(zo)}
        out.append(Case(name, {**inputs, **offsets, "guard": np.int32(GUARD)}))
    return out


def expect_z(got, x, y, alpha, beta, n, what):
    """z[:n] within 4 * FLT_EPSILON * (|alpha x| + |beta y|) of the exact value (any float
    evaluation, with or without FMA, rounds at most three times), then an intact guard."""
    ax = np.float64(alpha) * x[:n].astype(np.float64)
    by = np.float64(beta) * y[:n].astype(np.float64)
    tol = 4.0 * EPS * (np.abs(ax) + np.abs(by)) + 1e-30
    return close(got[:n], ax + by, what, tol=tol) + guard(got[n:], f"{what} past the end")


def check(case, out):
    g = int(case["guard"])
    if case.name == "perf":
        found = []
        for r, n in enumerate(case["n"].tolist()):
            z = out.array(f"z{r}", np.float32, (n + g,))
            found += expect_z(
                z, case["x"], case["y"], case["alpha"][r], case["beta"][r], n, f"z{r}"
            )
        return found
    n = int(case["n"])
    x = case["x"][int(case["x_offset"]) :]
    y = case["y"][int(case["y_offset"]) :]
    z = out.array("z", np.float32, (n + g,))
    return expect_z(z, x, y, case["alpha"], case["beta"], n, "z")


if __name__ == "__main__":
    main(cases, check)
