"""cub-device-scan's checker: draws every run's cases and decides on the outputs the runner
wrote (trusted: it never sees solution code). out = the exclusive prefix sum of x in 64 bits,
compared exactly; nothing written past the n outputs."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 16  # poisoned long longs after each output: the solution must not write them
SENTINEL = 1_000_000_000  # x[n], past the inputs: a scan over n + 1 elements writes out[n]
INT_MAX = 2**31 - 1

# name, n, the largest value (values uniform in [0, max]); INT_MAX overflows 32 bits at once
TESTS = [
    ("empty", 0, 10),
    ("single", 1, 10),
    ("two-huge", 2, INT_MAX),
    ("small", 1000, 1000),
    ("tile-plus-one", 1025, INT_MAX),
    ("all-zeros", 100003, 0),
    ("million-huge", (1 << 20) + 1, INT_MAX),
    ("three-million", 3000001, 1000),
    ("total-past-2-31", (1 << 24) + 7, 300),
]


def values(rng, n, top):
    return rng.integers(0, top, n, dtype=np.int32, endpoint=True)


def perf_cases(rng):
    n = 1 << 24
    timed = 4  # each call its own input and output; call r draws values in [0, 1000 + 500 r]
    warmup = 3
    x = np.stack([values(rng, n, 1000 + 500 * r) for r in range(timed)])
    inputs = {"x": x, "warmup": np.int32(warmup), "guard": np.int32(GUARD)}
    return [Case("perf", inputs)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, top in TESTS:
        x = np.append(values(rng, n, top), np.int32(SENTINEL))
        out.append(Case(name, {"x": x, "n": np.int32(n), "guard": np.int32(GUARD)}))
    return out


def exclusive_scan(x):
    """out[i] = x[0] + ... + x[i-1] in int64 (exact: n * INT_MAX < 2^63)."""
    out = np.zeros(len(x), dtype=np.int64)
    np.cumsum(x[:-1], dtype=np.int64, out=out[1:])
    return out


def expect(got, x, n, what):
    return exact(got[:n], exclusive_scan(x[:n]), what) + guard(got[n:], f"{what} past the end")


def check(case, out):
    g = int(case["guard"])
    if case.name == "perf":
        timed, n = case["x"].shape
        found = []
        for r in range(timed):
            got = out.array(f"out{r}", np.int64, (n + g,))
            found += expect(got, case["x"][r], n, f"out{r}")
        return found
    n = int(case["n"])
    return expect(out.array("out", np.int64, (n + g,)), case["x"], n, "out")


if __name__ == "__main__":
    main(cases, check)
