"""thrust-transform-reduce's checker: draws every run's values and decides on the mean and
variance the runner wrote (trusted: it never sees solution code): each within 1e-8 relative
(plus 1e-12 absolute) of a two-pass host computation."""

import numpy as np
from cudaenv_check import Case, close, main

POISON = np.float32(1.0e30)  # the element after the n values: reading it ruins both results
# Double accumulation over up to 2^26 terms in any order (serial chunks or trees) stays within
# ~1e-11 relative of the exact value, so 1e-8 relative is safe for any sound double-precision
# method and rejects float accumulation (errors ~1e-5 and worse) and E[x^2] - E[x]^2 at a
# large mean. The host side sums float64 pairwise (numpy's sum): ~1e-14 relative.
RTOL, ATOL = 1e-8, 1e-12

# name, n, offset, spread: values normal around offset with standard deviation spread / 2 (the
# spread of offset + spread * (u1 + u2 + u3 - 1.5) for uniform u, the old harness's values)
TESTS = [
    ("empty", 0, 0.0, 1.0),
    ("single", 1, 3.0, 1.0),
    ("two", 2, -1.0, 4.0),
    ("small", 1000, 0.0, 1.0),
    ("small-spread", 65537, -7.5, 0.25),
    ("large-mean", 1000003, 1000.0, 1.0),  # mean 1000, standard deviation 0.5
    ("wide", 1 << 24, 0.5, 100.0),
    ("odd-large", (1 << 25) + 11, -250.0, 3.0),
]


def draw(rng, n, offset, spread):
    x = rng.standard_normal(n, dtype=np.float32)
    x *= np.float32(spread / 2)
    x += np.float32(offset)
    return x


def perf_cases(rng):
    n = 1 << 25
    timed = 3  # each call its own values: offset 10 + 3 r, spread 2 + r
    warmup = 3
    x = np.stack([draw(rng, n, 10.0 + 3.0 * r, 2.0 + r) for r in range(timed)])
    return [Case("perf", {"x": x, "warmup": np.int32(warmup)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [
        Case(name, {"x": np.append(draw(rng, n, off, spread), POISON), "n": np.int32(n)})
        for name, n, off, spread in TESTS
    ]


def moments(x):
    """(mean, population variance) of float32 values, two passes in float64; (0, 0) if empty."""
    if x.size == 0:
        return 0.0, 0.0
    wide = x.astype(np.float64)
    mean = wide.sum() / x.size
    wide -= mean
    wide *= wide
    return mean, wide.sum() / x.size


def expect(mean, variance, x, what):
    want_mean, want_var = moments(x)
    found = close(mean, np.float64(want_mean), f"{what}mean", atol=ATOL, rtol=RTOL)
    return found + close(variance, np.float64(want_var), f"{what}variance", atol=ATOL, rtol=RTOL)


def check(case, out):
    if case.name == "perf":
        timed, n = case["x"].shape
        means = out.array("mean", np.float64, (timed,))
        variances = out.array("variance", np.float64, (timed,))
        return [
            m
            for r in range(timed)
            for m in expect(means[r, ...], variances[r, ...], case["x"][r], f"call {r}: ")
        ]
    n = int(case["n"])
    mean = out.array("mean", np.float64, ())
    return expect(mean, out.array("variance", np.float64, ()), case["x"][:n], "")


if __name__ == "__main__":
    main(cases, check)
