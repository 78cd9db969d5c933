"""cublas-axpy-dot's checker: draws every run's cases and decides on what the runner wrote
(trusted: it never sees solution code): y = a x + y within 2.5e-7 (|a x| + |y|) of the exact
value, the returned dot within 2e-5 sum |x y| of the exact dot of x with the y the call
produced, x and everything past the n elements unchanged, the handle's settings as found."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main, poison_of

GUARD = 64  # poisoned floats after x and y: neither may be written there
# a x + y in float32 (with or without FMA) is within two roundings, 2 * 2^-24 (|a x| + |y|)
Y_RTOL = 2.5e-7
# a float32 dot (any summation order) is within ~log2(n) 2^-24 of sum |x y| for tree sums;
# 2e-5 also covers sequential float32 accumulation of all-positive data up to a few million
DOT_RTOL = 2e-5

# name, n, a, positive (x, y in [0, 1) instead of [-1, 1) and [-3, 3))
TESTS = [
    ("empty", 0, 2.0, False),
    ("single", 1, 1.5, False),
    ("seven", 7, -2.25, False),
    ("a-zero", 1000, 0.0, False),
    ("odd", 4097, 3.0, False),
    ("million", 1 << 20, -0.5, False),
    ("positive", 1000003, 1.0, True),
    ("five-million", 5000011, 0.75, False),
]


def cases(stage, rng):
    out = []
    for name, n, a, positive in TESTS:
        x = rng.uniform(0.0 if positive else -1.0, 1.0, n).astype(np.float32)
        y = rng.uniform(0.0 if positive else -3.0, 1.0 if positive else 3.0, n)
        tail = np.full(GUARD, poison_of(np.float32))
        inputs = {"x": np.append(x, tail), "y": np.append(y.astype(np.float32), tail)}
        out.append(Case(name, {**inputs, "n": np.int32(n), "a": np.float32(a)}))
    return out


def check(case, out):
    n, a = int(case["n"]), np.float64(case["a"])
    x, y_old = case["x"], case["y"]
    y = out.array("y", np.float32, y_old.shape)
    ax = a * x[:n].astype(np.float64)
    y64 = y_old[:n].astype(np.float64)
    found = close(y[:n], ax + y64, "y", tol=Y_RTOL * (np.abs(ax) + np.abs(y64)))
    found += guard(y[n:], "y past the end")
    found += exact(out.array("x", np.float32, x.shape).view(np.uint32), x.view(np.uint32), "x")
    products = x[:n].astype(np.float64) * y[:n].astype(np.float64)  # with the y produced
    dot = out.array("dot", np.float32, ())
    found += close(dot, products.sum(), "dot", tol=DOT_RTOL * np.abs(products).sum())
    before = out.array("settings_before", np.int32, (3,))
    after = out.array("settings_after", np.int32, (3,))
    found += exact(after, before, "the handle's (pointer mode, math mode, default stream)")
    return found


if __name__ == "__main__":
    main(cases, check)
