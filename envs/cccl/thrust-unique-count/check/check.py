"""thrust-unique-count's checker: draws every run's values and decides on the counts the runner
wrote (trusted: it never sees solution code): the number of distinct values among the first n,
exactly; the array (its sentinel included) unmodified."""

import numpy as np
from cudaenv_check import Case, exact, main

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SENTINEL = INT_MIN + 12345  # the element after the n values (never one of them)


def pooled(rng, n, pool):
    """n values, each one of `pool` distinct candidates spread over the whole int range: an
    index k in [0, pool) mapped through a bijection of 32-bit words (distinct k, distinct
    values), shuffled per run."""
    k = rng.integers(0, pool, n, dtype=np.uint64)
    a = np.uint64(rng.integers(0, 2**31) * 2 + 1)  # odd: k -> a k + b is a bijection mod 2^32
    b = np.uint64(rng.integers(0, 2**32))
    with np.errstate(over="ignore"):
        x = ((k * a + b) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        for mul in (0x7FEB352D, 0x846CA68B):  # xorshift-multiply: invertible, so still distinct
            x = (x ^ (x >> np.uint32(16))) * np.uint32(mul)
        x ^= x >> np.uint32(16)
    return x.view(np.int32)


def tests(rng):
    """name -> the values (without the sentinel)."""
    v = rng.integers(INT_MIN, INT_MAX, 3, dtype=np.int32, endpoint=True)
    top = int(rng.integers(70000, INT_MAX))
    return {
        "empty": np.zeros(0, dtype=np.int32),
        "single": v[:1],
        "pair-equal": np.repeat(v[1], 2),
        "extremes": np.array([INT_MIN, INT_MAX, 0, -1, INT_MIN], dtype=np.int32),
        "all-equal": np.repeat(v[2], 100000),
        "all-distinct-descending": (top - np.arange(70001)).astype(np.int32),
        "few-distinct": pooled(rng, 4099, 17),
        "half-distinct": pooled(rng, 1000003, 500000),
        "mostly-distinct": pooled(rng, 3000001, 4000000000),
    }


def perf_cases(rng):
    n = 1 << 23
    timed = 5  # each call its own values: call r draws from n / (r + 2) candidates
    warmup = 3
    values = np.stack([np.append(pooled(rng, n, n // (r + 2)), SENTINEL) for r in range(timed)])
    return [Case("perf", {"values": values.astype(np.int32), "warmup": np.int32(warmup)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [
        Case(name, {"values": np.append(v, np.int32(SENTINEL)), "n": np.int32(len(v))})
        for name, v in tests(rng).items()
    ]


def distinct(values):
    """How many distinct values (sorted, the changes counted: np.unique is slower)."""
    return np.count_nonzero(np.diff(np.sort(values))) + min(values.size, 1)


def expect(count, values_after, values, n, what):
    found = exact(count, np.int32(distinct(values[:n])), f"{what}count")
    return found + exact(values_after, values, f"{what}values (modified by the call)")


def check(case, out):
    if case.name == "perf":
        timed, padded = case["values"].shape
        counts = out.array("count", np.int32, (timed,))
        found = []
        for r in range(timed):
            after = out.array(f"values{r}", np.int32, (padded,))
            found += expect(counts[r, ...], after, case["values"][r], padded - 1, f"call {r}: ")
        return found
    values = case["values"]
    count = out.array("count", np.int32, ())
    after = out.array("values", np.int32, values.shape)
    return expect(count, after, values, int(case["n"]), "")


if __name__ == "__main__":
    main(cases, check)
