"""scan-inclusive's checker: draws every run's arrays and decides on the scans the runner wrote
(trusted: it never sees solution code). out[i] = in[0] + ... + in[i], exactly, in int32."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned ints after out's n entries: the solution must not write them
# sizes around every power of two and tile boundary a scan kernel is likely to use
SIZES = [
    2, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097,
    65535, 65536, 65537, 1 << 20, (1 << 20) + 1, 4194305,
]  # fmt: skip
# name, n, value range (inclusive), in/out element offsets; no prefix can overflow int32
# (|value| * n stays below 2^31 in every case)
TESTS = [
    ("empty", 0, (-8, 8), 0, 0),
    ("single", 1, (-50, 50), 0, 0),
    *((f"random-{n}", n, (-8, 8), 0, 0) for n in SIZES),
    ("all-ones", 3000017, (1, 1), 0, 0),
    ("large-values", 5003, (-400000, 400000), 0, 0),
    ("misaligned", 1000003, (-8, 8), 1, 3),
    ("negative-drift", 9000001, (-20, 3), 0, 0),
    ("huge", (1 << 26) + 5, (-8, 8), 0, 0),
]


def ints(rng, n, lo, hi):
    return rng.integers(lo, hi, n, endpoint=True, dtype=np.int32)


def perf_case(rng, N, R):
    """Timed call r scans in[4r : 4r + N - 7r] into its own output (the old sub-ranges)."""
    sizes = np.array([N - 7 * r for r in range(R)], dtype=np.int32)
    offsets = np.array([4 * r for r in range(R)], dtype=np.int64)
    inputs = {"in": ints(rng, N, -8, 8), "n": sizes, "in_offset": offsets}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    N = 1 << 24
    R = 5  # timed calls, each on its own sub-range of the input, each with its own output
    return [perf_case(rng, N, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, (lo, hi), io, oo in TESTS:
        inputs = {"in": ints(rng, n, lo, hi), "in_offset": np.int64(io)}
        inputs["out_offset"] = np.int64(oo)
        out.append(Case(name, {**inputs, "guard": np.int32(GUARD)}))
    return out


def expect_out(got, x, what):
    """got[:n] equal to the exact prefix sums of x (computed in int64), then an intact guard."""
    n = x.size
    want = np.cumsum(x, dtype=np.int64)
    return exact(got[:n].astype(np.int64), want, what) + guard(got[n:], f"{what} past the end")


def check(case, out):
    g, x = int(case["guard"]), case["in"]
    if case.name == "perf":
        found = []
        for r, (n, off) in enumerate(zip(case["n"].tolist(), case["in_offset"].tolist())):
            got = out.array(f"out{r}", np.int32, (n + g,))
            found += expect_out(got, x[off : off + n], f"out{r}")
        return found
    got = out.array("out", np.int32, (x.size + g,))
    found = expect_out(got, x, "out")
    return found + exact(out.array("in_after", np.int32, x.shape), x, "in (modified by the call)")


if __name__ == "__main__":
    main(cases, check)
