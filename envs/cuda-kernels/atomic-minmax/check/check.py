"""atomic-minmax's checker: draws every run's cases and decides on the gmin/gmax tables the
runner wrote (trusted: it never sees solution code). Integers: exact comparison."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned ints after each table: the solution must not write them
I32 = np.iinfo(np.int32)

# name, n, groups, key pattern, value pattern
TESTS = [
    ("empty-one-group", 0, 1, "uniform", "full"),
    ("empty-many-groups", 0, 5000, "uniform", "full"),
    ("single", 1, 1, "uniform", "full"),
    ("one-group", 1000, 1, "uniform", "full"),
    ("seven-groups", 100003, 7, "uniform", "small"),
    ("extreme-values", 50001, 13, "uniform", "extremes"),
    ("all-in-last-group", (1 << 20) + 1, 300, "one-key", "full"),
    ("sorted-runs", (1 << 20) + 7, 777, "sorted-runs", "full"),
    ("hot-keys", (1 << 21) + 3, 2048, "hot", "full"),
    ("groups-4096", 1 << 20, 4096, "uniform", "full"),
    ("groups-4097", 1 << 20, 4097, "uniform", "extremes"),
    ("groups-100000", (1 << 22) + 9, 100000, "uniform", "full"),
    ("groups-4194304-mostly-empty", 1000, 1 << 22, "uniform", "full"),
    ("large", 1 << 24, 1000, "uniform", "full"),
]


def keys_of(rng, n, g, pattern):
    if pattern == "one-key":
        return np.full(n, g - 1, dtype=np.int32)
    if pattern == "sorted-runs":
        return (np.arange(n, dtype=np.int64) * g // max(n, 1)).astype(np.int32)
    uniform = rng.integers(0, g, n, dtype=np.int32)
    if pattern == "uniform":
        return uniform
    # hot: seven in eight elements fall on the first (up to) three keys
    hot = rng.integers(0, min(g, 3), n, dtype=np.int32)
    return np.where(rng.integers(0, 8, n) == 0, uniform, hot).astype(np.int32)


def vals_of(rng, n, pattern):
    if pattern == "full":
        return rng.integers(I32.min, I32.max, n, dtype=np.int32, endpoint=True)
    if pattern == "small":
        return rng.integers(-10, 10, n, dtype=np.int32, endpoint=True)
    picks = np.array([I32.min, I32.max, I32.min + 1, I32.max - 1, 0], dtype=np.int32)
    return picks[rng.integers(0, len(picks), n)]


def fills(rng):
    """What gmin and gmax hold on entry (garbage the solution must overwrite): below and above
    almost every value, so a table never initialised keeps showing it."""
    low = rng.integers(I32.min, -(1 << 30), dtype=np.int32)
    high = rng.integers(1 << 30, I32.max, dtype=np.int32, endpoint=True)
    return {"min_fill": np.int32(low), "max_fill": np.int32(high), "guard": np.int32(GUARD)}


def perf_case(rng, n, g, timed):
    inputs = {"keys": keys_of(rng, n, g, "uniform"), "vals": vals_of(rng, n, "full")}
    inputs |= {"num_groups": np.int32(g), "timed": np.int32(timed)}
    return Case("perf", {**inputs, **fills(rng)})


def perf_cases(rng):
    n = 1 << 25
    g = 1000
    timed = 5  # timed calls on the same input, each writing its own tables
    return [perf_case(rng, n, g, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, g, kp, vp in TESTS:
        inputs = {"keys": keys_of(rng, n, g, kp), "vals": vals_of(rng, n, vp)}
        out.append(Case(name, {**inputs, "num_groups": np.int32(g), **fills(rng)}))
    return out


def expected(keys, vals, g):
    want_min = np.full(g, I32.max, dtype=np.int32)
    want_max = np.full(g, I32.min, dtype=np.int32)
    np.minimum.at(want_min, keys, vals)
    np.maximum.at(want_max, keys, vals)
    return want_min, want_max


def expect_tables(out, suffix, want_min, want_max, pad):
    g, found = len(want_min), []
    for name, want in ((f"gmin{suffix}", want_min), (f"gmax{suffix}", want_max)):
        got = out.array(name, np.int32, (g + pad,))
        found += exact(got[:g], want, name) + guard(got[g:], f"{name} past the end")
    return found


def check(case, out):
    g = int(case["num_groups"])
    want_min, want_max = expected(case["keys"], case["vals"], g)
    if case.name == "perf":
        suffixes = [str(t) for t in range(int(case["timed"]))]
    else:
        suffixes = [""]
    pad = int(case["guard"])
    return [m for s in suffixes for m in expect_tables(out, s, want_min, want_max, pad)]


if __name__ == "__main__":
    main(cases, check)
