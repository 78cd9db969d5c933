"""compact-positive's checker: draws every run's arrays and decides on the count and the
compacted values the runner wrote (trusted: it never sees solution code). Bitwise exact: the
kept values are copies, in their original order, and the count is an integer."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned floats after `out`'s n entries: the solution must not write them
PATTERNS = ["half", "sparse", "all-positive", "none-positive", "zeros-and-tiny", "alternating"]
SIZES = [1, 2, 31, 32, 33, 255, 256, 257, 1000, 4095, 4096, 4097, 65537, (1 << 20) + 77]
TINY = np.finfo(np.float32).smallest_subnormal


def uniform(rng, lo, hi, n):
    return (lo + (hi - lo) * rng.random(n)).astype(np.float32)


def data(rng, n, pattern):
    i = np.arange(n)
    if pattern == "half":
        return uniform(rng, -100.0, 100.0, n)
    if pattern == "sparse":  # 1% positive
        return np.where(rng.integers(0, 100, n) == 0, uniform(rng, 0.5, 1.0, n), -rng.random(n))
    if pattern == "all-positive":
        return uniform(rng, 1.0, 2.0, n) + (i % 1000).astype(np.float32)
    if pattern == "none-positive":
        return np.where(i % 3 == 0, np.float32(0.0), -uniform(rng, 0.0, 5.0, n))
    if pattern == "zeros-and-tiny":  # signed zeros and subnormals: +-0 dropped, +tiny kept
        picks = np.array([0.0, -0.0, TINY, -TINY, 1e-40, 0.0], dtype=np.float32)
        pick = rng.integers(0, 6, n)
        return np.where(pick == 5, -rng.random(n).astype(np.float32), picks[pick])
    return np.where(i % 2 == 1, 1.0, -1.0).astype(np.float32) * (i + 1).astype(np.float32)


def named(n, pattern, rng):
    x = np.asarray(data(rng, n, pattern), dtype=np.float32)
    return Case(f"n{n}-{pattern}", {"in": x, "guard": np.int32(GUARD)})


def perf_case(rng, n, timed):
    inputs = {"in": np.asarray(data(rng, n, "half"), np.float32), "timed": np.int32(timed)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    n = 1 << 24
    timed = 5  # timed calls on the same input, each with its own output and count
    return [perf_case(rng, n, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [named(0, "half", rng)]
    out += [named(n, p, rng) for n in SIZES for p in PATTERNS]
    out += [named((1 << 24) + 1, "half", rng), named((1 << 24) + 3, "zeros-and-tiny", rng)]
    out.append(named(12345, "half", rng))  # small again after large calls
    out.append(named(0, "all-positive", rng))
    return out


def expect(out, suffix, count, want, pad):
    """count exact, then out[:count] bitwise (the runner sent back as many entries as the
    count it read, up to n), then the guard after out's n entries."""
    name = f"out{suffix}"
    found = exact(count, np.int32(len(want)), f"count{suffix}")
    if found:
        return found
    got = out.array(name, np.float32, want.shape)
    found = exact(got.view(np.uint32), want.view(np.uint32), f"{name} (bits)")
    return found + guard(out.array(f"guard{suffix}", np.float32, (pad,)), f"{name} past n")


def check(case, out):
    x, pad = case["in"], int(case["guard"])
    want = x[x > 0]
    if case.name != "perf":
        return expect(out, "", out.array("count", np.int32, ()), want, pad)
    counts = out.array("count", np.int32, (int(case["timed"]),))
    return [m for t in range(len(counts)) for m in expect(out, str(t), counts[t, ...], want, pad)]


if __name__ == "__main__":
    main(cases, check)
