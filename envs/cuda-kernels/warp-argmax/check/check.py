"""warp-argmax's checker: draws every run's arrays and decides on the per-segment maxima and
indices the runner wrote (trusted: it never sees solution code). Segment s is x[32s : 32s+32];
seg_arg[s] is the first index of its largest value (-0.0 and +0.0 tie), seg_max[s] = x[seg_arg[s]]
bit for bit."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned entries after seg_max and seg_arg: the solution must not write them
FLT_MAX = np.finfo(np.float32).max
FLT_MIN = np.finfo(np.float32).tiny
PATTERNS = [
    "random",
    "many-ties",
    "all-equal",
    "signed-zeros",
    "ascending",
    "descending",
    "extremes",
]
SIZES = [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4113, 65536, (1 << 20) + 5]
LARGE = [((1 << 24) + 3, "random"), ((1 << 24) + 29, "many-ties")]


def data(rng, n, pattern):
    """random: uniform in [-1000, 1000); many-ties: 0..3; all-equal: -2.5; signed-zeros: +0.0,
    -0.0 or a negative; ascending: i % 1000; descending: -i; extremes: -FLT_MAX, FLT_MAX,
    -FLT_MIN or -1e30."""
    i = np.arange(n)
    if pattern == "random":
        return rng.uniform(-1000.0, 1000.0, n).astype(np.float32)
    if pattern == "many-ties":
        return rng.integers(0, 4, n).astype(np.float32)
    if pattern == "all-equal":
        return np.full(n, -2.5, dtype=np.float32)
    if pattern == "signed-zeros":
        picks = np.stack([np.zeros(n), np.full(n, -0.0), -rng.uniform(1.0, 2.0, n)])
        return picks[rng.integers(0, 3, n), i].astype(np.float32)
    if pattern == "ascending":
        return (i % 1000).astype(np.float32)
    if pattern == "descending":
        return (-i).astype(np.float32)
    return np.array([-FLT_MAX, FLT_MAX, -FLT_MIN, -1e30], dtype=np.float32)[rng.integers(0, 4, n)]


def case(rng, n, pattern):
    return Case(f"n{n}-{pattern}", {"x": data(rng, n, pattern), "guard": np.int32(GUARD)})


def perf_case(rng, n, timed):
    inputs = {"x": data(rng, n, "random"), "calls": np.int32(timed)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    n = 1 << 26
    segs = n // 32
    timed = 5  # timed calls on the same x, each writing its own seg_max and seg_arg
    assert segs * 32 == n  # whole segments only, as before
    return [perf_case(rng, n, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case(rng, n, p) for n in SIZES for p in PATTERNS]
    return out + [case(rng, n, p) for n, p in LARGE]


def argmax(x):
    """Each segment's first index of its maximum (numpy's argmax keeps the first of equals, and
    -0.0 == +0.0); the last segment padded with -inf, below every finite value."""
    segs = (x.size + 31) // 32
    padded = np.full(segs * 32, -np.inf, dtype=np.float32)
    padded[: x.size] = x
    return (np.argmax(padded.reshape(segs, 32), axis=1) + 32 * np.arange(segs)).astype(np.int32)


def expect(out, x, want, pad, suffix):
    segs = want.size
    got_arg = out.array(f"seg_arg{suffix}", np.int32, (segs + pad,))
    got_max = out.array(f"seg_max{suffix}", np.float32, (segs + pad,))
    found = exact(got_arg[:segs], want, f"seg_arg{suffix}")
    found += exact(
        got_max[:segs].view(np.uint32), x[want].view(np.uint32), f"seg_max{suffix} (bits)"
    )
    found += guard(got_arg[segs:], f"seg_arg{suffix} past the end")
    return found + guard(got_max[segs:], f"seg_max{suffix} past the end")


def check(case, out):
    x, pad = case["x"], int(case["guard"])
    want = argmax(x)
    if case.name != "perf":
        return expect(out, x, want, pad, "")
    return [m for t in range(int(case["calls"])) for m in expect(out, x, want, pad, str(t))]


if __name__ == "__main__":
    main(cases, check)
