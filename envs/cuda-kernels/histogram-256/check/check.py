"""histogram-256's checker: draws every run's bytes and decides on the 256 bins the runner
wrote (trusted: it never sees solution code). Counts: exact comparison."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned words after the 256 bins: the solution must not write them
CHUNK = 1 << 24  # bytes drawn at a time (bounded memory for the 256 MiB buffers)


def random_bytes(rng, n):
    return np.frombuffer(rng.bytes(n), dtype=np.uint8).copy()


def _text_table():
    """A byte for each 16-bit random value: 16% spaces, 68% lower-case letters, 11% digits,
    5% any byte (one table lookup per byte: fast for 256 MiB)."""
    r = np.arange(1 << 16)
    share, low = (r * 100) >> 16, r & 0xFF
    digit = np.where(share < 95, ord("0") + low % 10, low)
    return np.where(share < 16, ord(" "), np.where(share < 84, ord("a") + low % 26, digit))


TEXT = _text_table().astype(np.uint8)


def text_like(rng, n):
    """Mostly lower-case letters and spaces, some digits, a few of anything."""
    out = np.empty(n, dtype=np.uint8)
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        out[start : start + m] = TEXT[np.frombuffer(rng.bytes(2 * m), dtype="<u2")]
    return out


def case(name, data, offset=0):
    """The histogram of ``data``, placed ``offset`` bytes into its device buffer."""
    inputs = {"data": data, "offset": np.int64(offset), "guard": np.int32(GUARD)}
    return Case(name, inputs)


def perf_case(rng, N, R):
    return Case("perf", {"data": text_like(rng, N), "calls": np.int32(R), "guard": np.int32(GUARD)})


def perf_cases(rng):
    N = 1 << 28
    R = 8  # timed calls, call r on bytes [16r, 16r + N - 17r), each with its own bins
    return [perf_case(rng, N, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case("empty", np.zeros(0, np.uint8)), case("single", random_bytes(rng, 1))]
    for n in (15, 16, 17, 255, 256, 257, 1000, 4099, 65539, 1 << 20, 10000007):
        out.append(case(f"random-{n}", random_bytes(rng, n)))
    for off in (1, 3, 7, 15):
        out.append(case(f"misaligned-{off}", random_bytes(rng, 100003), off))
    out.append(case("misaligned-short", random_bytes(rng, 9), 5))
    value = rng.integers(0, 256, dtype=np.uint8)  # a single value: contention on one bin
    out.append(case("one-value", np.full(5000011, value, dtype=np.uint8)))
    out.append(case("all-0xff", np.full(70001, 0xFF, dtype=np.uint8), 2))
    step = 2 * int(rng.integers(0, 128)) + 1  # odd: every byte value, in a cycle
    cycle = (np.arange(256 * 1000 + 17) * step + int(rng.integers(0, 256))) % 256
    out.append(case("cycle", cycle.astype(np.uint8)))
    out.append(case("text-like", text_like(rng, 20000003), 1))
    out.append(case("huge", random_bytes(rng, (1 << 28) + 3)))
    return out


def counts(data):
    """The histogram of ``data``, counted a chunk at a time (bincount widens to int64)."""
    total = np.zeros(256, dtype=np.int64)
    for start in range(0, len(data), CHUNK):
        total += np.bincount(data[start : start + CHUNK], minlength=256)
    return total


def expect_bins(got, want, what):
    return exact(got[:256], want.astype(np.uint32), what) + guard(
        got[256:], f"{what} past bins[255]"
    )


def check(case, out):
    data, pad = case["data"], int(case["guard"])
    if case.name != "perf":
        return expect_bins(out.array("bins", np.uint32, (256 + pad,)), counts(data), "bins")
    calls = int(case["calls"])
    got = out.array("bins", np.uint32, (calls, 256 + pad))
    whole, found = counts(data), []
    for r in range(calls):  # call r counts all but its first 16r and last r bytes
        start, end = 16 * r, 16 * r + len(data) - 17 * r
        want = whole - counts(data[:start]) - counts(data[end:])
        found += expect_bins(got[r], want, f"bins of call {r}")
    return found


if __name__ == "__main__":
    main(cases, check)
