"""conv1d-constant's checker: draws every run's signals and filters and decides on the
outputs the runner wrote (trusted: it never sees solution code).
out[i] = sum_k w[k + r] * in[i + k], in[j] = 0 outside [0, n)."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after each output: the solution must not write them
EPS = float(np.finfo(np.float32).eps)
RADII = [0, 1, 2, 5, 16, 31, 32]
SIZES = [0, 1, 2, 7, 31, 64, 65, 1000, 4097, 100003]
# name, n, radius, small-integer data (compared exactly)
LARGE = [
    ("large-r32", (1 << 22) + 13, 32, False),
    ("large-r7-int", (1 << 22) + 5, 7, True),
    ("large-r16", 3000000, 16, False),
]


def values(rng, shape, ints):
    """Small integers in [-4, 4] (every partial sum exact in float) or floats in [-1, 1)."""
    if ints:
        return rng.integers(-4, 4, shape, endpoint=True).astype(np.float32)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def case(name, rng, n, r, ints, filters=1):
    """``filters`` filters of radius r (set one after another on the same input)."""
    inputs = {"x": values(rng, n, ints), "weights": values(rng, (filters, 2 * r + 1), ints)}
    inputs |= {"radius": np.int32(r), "exact": np.bool_(ints), "guard": np.int32(GUARD)}
    return Case(name, inputs)


def perf_case(rng, n, r, timed):
    made = case("perf", rng, n, r, False)
    return Case("perf", {**made.inputs, "timed": np.int32(timed)})


def perf_cases(rng):
    n = 1 << 24
    r = 16
    timed = 5  # timed calls with the same filter and input, each writing its own output
    return [perf_case(rng, n, r, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for r in RADII:
        for n in SIZES:
            ints = (n + r) % 3 == 0
            out.append(case(f"r{r}-n{n}{'-int' if ints else ''}", rng, n, r, ints))
    out += [case(name, rng, n, r, ints) for name, n, r, ints in LARGE]
    # the filter must really be replaced: three filters of one radius on the same input
    out.append(case("filter-replaced", rng, 5000, 4, True, filters=3))
    return out


def convolved(x, w):
    """The exact result in float64 and S_i = sum_k |w[k + r] * in[i + k]| (numpy's direct
    correlation; its full result's entry r + i is output i, zero padding included)."""
    n, r = len(x), (len(w) - 1) // 2
    if n == 0:
        return np.zeros(0), np.zeros(0)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    total = np.correlate(x64, w64, "full")[r : r + n]
    return total, np.correlate(np.abs(x64), np.abs(w64), "full")[r : r + n]


def expect(got, x, w, ints, pad, what, reference=None):
    """The float sum of m = 2r+1 products, in any order and with or without FMA, is within
    m * FLT_EPSILON * S_i of the exact value (recursive summation's error bound); twice that
    plus 1e-6 is allowed. Integer data: every partial sum is an exact small integer, so exact."""
    n = len(x)
    want, mag = reference or convolved(x, w)
    if ints:
        found = exact(got[:n], want.astype(np.float32), what)
    else:
        found = close(got[:n], want, what, atol=1e-6, tol=2.0 * len(w) * EPS * mag)
    return found + guard(got[n:], f"{what} past the end")


def check(case, out):
    x, weights, pad = case["x"], case["weights"], int(case["guard"])
    ints = bool(case["exact"])
    shape = (len(x) + pad,)
    if case.name == "perf":  # one filter and one input: one reference for every timed call
        reference = convolved(x, weights[0])
        found = []
        for t in range(int(case["timed"])):
            got = out.array(f"out{t}", np.float32, shape)
            found += expect(got, x, weights[0], ints, pad, f"out{t}", reference)
        return found
    found = []
    for k, w in enumerate(weights):
        found += expect(out.array(f"out{k}", np.float32, shape), x, w, ints, pad, f"out{k}")
    return found


if __name__ == "__main__":
    main(cases, check)
