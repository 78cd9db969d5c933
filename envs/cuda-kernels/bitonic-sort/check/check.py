"""bitonic-sort's checker: draws every run's cases and decides on the arrays the runner
sorted (trusted: it never sees solution code). Integers: exact comparison with numpy's sort."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned ints after each array: the solution must not write them
I32 = np.iinfo(np.int32)
PATTERNS = ["random", "few-distinct", "sorted", "reversed", "all-equal", "extremes"]
SIZES = [1 << lg for lg in range(15)] + [1 << lg for lg in (15, 16, 17, 20, 22)]


def data(rng, n, pattern):
    """n ints of ``pattern``; the ordered ones start from a value drawn per run."""
    i = np.arange(n, dtype=np.int64)
    start = int(rng.integers(-1000, 1000))
    if pattern == "random":
        return rng.integers(I32.min, I32.max, n, dtype=np.int32, endpoint=True)
    if pattern == "few-distinct":
        return rng.integers(-2, 2, n, dtype=np.int32, endpoint=True)
    if pattern == "sorted":
        return (start + 3 * i - n).astype(np.int32)
    if pattern == "reversed":
        return (start + n - 7 * i).astype(np.int32)
    if pattern == "all-equal":
        return np.full(n, rng.integers(-100, 100), dtype=np.int32)
    picks = np.array([I32.min, I32.max, -1, 0], dtype=np.int32)
    return picks[rng.integers(0, len(picks), n)]


def perf_case(rng, n, timed):
    inputs = {"data": data(rng, n, "random"), "timed": np.int32(timed)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    n = 1 << 24
    timed = 5  # timed calls, each sorting its own fresh copy of the input
    return [perf_case(rng, n, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [Case("n0", {"data": np.zeros(0, np.int32), "guard": np.int32(GUARD)})]
    for n in SIZES:
        for pattern in PATTERNS:
            inputs = {"data": data(rng, n, pattern), "guard": np.int32(GUARD)}
            out.append(Case(f"n{n}-{pattern}", inputs))
    return out


def expect_sorted(got, want, pad, what):
    n = len(want)
    return exact(got[:n], want, what) + guard(got[n:], f"{what} past the end")


def check(case, out):
    want, pad = np.sort(case["data"]), int(case["guard"])
    shape = (len(want) + pad,)
    if case.name == "perf":
        names = [f"data{t}" for t in range(int(case["timed"]))]
    else:
        names = ["data"]
    return [m for k in names for m in expect_sorted(out.array(k, np.int32, shape), want, pad, k)]


if __name__ == "__main__":
    main(cases, check)
