"""reduce-sum's checker: draws every run's arrays and decides on the sums the runner wrote
(trusted: it never sees solution code). *out = x[0] + ... + x[n-1], within a tolerance."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after the result(s): the solution must not write them
# |got - exact| <= 5e-5 * sum|x_i| + 1e-6. Any float reduction whose partial sums are combined
# as a tree (or by atomics over per-block / per-warp partials) stays well inside this; the
# exact sum is accumulated here in double. Summing 2^26 elements one by one into a single
# float does not (it stagnates once the running sum is large), and a missing element is
# caught by the small cases and by the "spike" case.
RTOL, ATOL = 5e-5, 1e-6


def uniform(rng, lo, hi, n):
    return (lo + (hi - lo) * rng.random(n)).astype(np.float32)


def case(name, x, offset=0, n=None):
    """The sum of x[offset : offset + n] (the whole buffer by default): a pointer ``offset``
    floats into the caller's allocation."""
    n = len(x) - offset if n is None else n
    inputs = {"x": x, "offset": np.int64(offset), "n": np.int32(n), "guard": np.int32(GUARD)}
    return Case(name, inputs)


def perf_case(rng, N, R):
    inputs = {"x": uniform(rng, -0.5, 1.0, N), "calls": np.int32(R)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    N = 1 << 26
    R = 8  # timed calls, call r on x[4r : 4r + N - 8r - 1], each into its own result
    return [perf_case(rng, N, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case("empty", np.ones(4, np.float32), 0, 0), case("single", uniform(rng, -4, 4, 1))]
    for n in (2, 31, 32, 33, 255, 1000, 1025, 4096, 65537, 1 << 20, 10000019):
        out.append(case(f"uniform-{n}", uniform(rng, -0.5, 1.0, n)))
    out.append(case("misaligned-1", uniform(rng, -0.5, 1.0, 1000004), 1, 1000003))
    out.append(case("misaligned-3", uniform(rng, -1.0, 0.25, 777780), 3, 777777))
    out.append(case("all-ones", np.ones(1 << 24, np.float32)))
    out.append(case("cancelling", uniform(rng, -1.0, 1.0, 2000001)))
    spike = uniform(rng, -1e-3, 1e-3, 3000001)
    spike[rng.integers(0, len(spike))] = 1000.0  # one large element hidden among tiny ones
    out.append(case("spike", spike))
    out.append(case("huge", uniform(rng, -0.5, 1.0, 1 << 26)))
    return out


def expect_sum(got, x64, a64, what):
    """For n == 0 exactly 0.0f; otherwise within the tolerance of the double sum (``x64``
    and ``a64``: the summed elements and their magnitudes, in double)."""
    if len(x64) == 0:
        return exact(got, np.float32(0.0), what)
    return close(got, x64.sum(), what, atol=ATOL + RTOL * a64.sum())


def check(case, out):
    x64, pad = case["x"].astype(np.float64), int(case["guard"])
    a64 = np.abs(x64)
    if case.name == "perf":
        calls = int(case["calls"])
        got = out.array("out", np.float32, (calls + pad,))
        found = []
        for r in range(calls):
            part = slice(4 * r, 4 * r + len(x64) - 8 * r - 1)
            found += expect_sum(got[r, ...], x64[part], a64[part], f"out[{r}]")
        return found + guard(got[calls:], "out past the results")
    part = slice(int(case["offset"]), int(case["offset"]) + int(case["n"]))
    got = out.array("out", np.float32, (1 + pad,))
    found = expect_sum(got[0, ...], x64[part], a64[part], "*out")
    return found + guard(got[1:], "out past the result")


if __name__ == "__main__":
    main(cases, check)
