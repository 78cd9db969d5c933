"""cub-segmented-reduce's checker: draws every run's segments and values and decides on the
maxima the runner wrote (trusted: it never sees solution code). out[s] = max of segment s,
-FLT_MAX when empty, compared bit for bit; nothing written past the num_segments outputs."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 16  # poisoned floats after each output: the solution must not write them
POISON = np.float32(1.0e30)  # every value outside the segments: reading one shows in a maximum
LOWEST = np.finfo(np.float32).min  # -FLT_MAX, an empty segment's maximum
TAIL = 3  # poisoned values after the last segment

# name, segments, largest small segment, one in `huge_every` huge (0: none), huge minimum,
# offsets[0]; an empty segment one time in eight (the layout is drawn per run)
TESTS = [
    ("no-segments", 0, 4, 0, 0, 0),
    ("small-segments", 1000, 10, 0, 0, 0),
    ("three-huge-offset-start", 3, 5000000, 0, 0, 17),
    ("mixed-sizes", 100003, 64, 5000, 200000, 5),
    ("million-tiny", 1 << 20, 3, 0, 0, 0),
]


def mix(x):
    """The 32-bit hash that lays out the benchmark's segments (the same every round, so each
    round does the same work; tests/grading/bench_work.py counts it)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
        return x ^ (x >> np.uint32(16))


def hashed_lengths(segs, max_small, huge_every, huge_min, seed):
    with np.errstate(over="ignore"):
        h = mix(np.arange(segs, dtype=np.uint32) * np.uint32(2654435761) ^ np.uint32(seed))
    huge = huge_min + mix(h) % np.uint32(huge_min)
    small = 1 + mix(h ^ np.uint32(0x55)) % np.uint32(max_small)
    length = np.where((h >> np.uint32(3)) % np.uint32(huge_every) == 0, huge, small)
    return np.where(h % np.uint32(8) == 0, 0, length).astype(np.int64)


def drawn_lengths(rng, segs, max_small, huge_every, huge_min):
    """Lengths drawn as the benchmark's hash lays them: empty one time in eight, else huge
    (in [huge_min, 2 huge_min)) one time in ``huge_every``, else in [1, max_small]."""
    length = rng.integers(1, max_small, segs, endpoint=True)
    if huge_every:
        huge = rng.integers(0, huge_every, segs) == 0
        length = np.where(huge, rng.integers(huge_min, 2 * huge_min, segs), length)
    return np.where(rng.integers(0, 8, segs) == 0, 0, length)


def lay_out(rng, lengths, lead):
    """(vals, offsets): the segments from offsets[0] = lead, values q / 8 for q uniform in
    [-8000, 8000] (never -0.0), POISON before, between none, and TAIL after."""
    offsets = np.empty(len(lengths) + 1, dtype=np.int64)
    offsets[0] = lead
    np.cumsum(lengths, out=offsets[1:])
    offsets[1:] += lead
    end = int(offsets[-1])
    assert end < 2**31, "offsets are ints"
    vals = np.full(end + TAIL, POISON, dtype=np.float32)
    q = rng.integers(-8000, 8000, end - lead, dtype=np.int32, endpoint=True)
    vals[lead:end] = q.astype(np.float32) / np.float32(8)
    return vals, offsets.astype(np.int32)


def perf_cases(rng):
    segs = 100000
    timed = 5  # each call its own problem and output: about 18 million values each
    warmup = 3
    inputs = {"timed": np.int32(timed), "warmup": np.int32(warmup), "guard": np.int32(GUARD)}
    for r in range(timed):
        lengths = hashed_lengths(segs, 64, 10000, 1 << 20, 61 + r)
        inputs[f"vals{r}"], inputs[f"offsets{r}"] = lay_out(rng, lengths, 0)
    return [Case("perf", inputs)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    made = []
    for name, segs, max_small, huge_every, huge_min, lead in TESTS:
        lengths = drawn_lengths(rng, segs, max_small, huge_every, huge_min)
        made.append((name, *lay_out(rng, lengths, lead)))
    made.insert(1, ("one-empty-segment", np.full(6, POISON), np.array([3, 3])))
    one = rng.integers(-8000, 8000, endpoint=True) / 8
    made.insert(2, ("one-element", np.array([one, POISON]), np.array([0, 1])))
    guarded = {"guard": np.int32(GUARD)}
    return [
        Case(name, {"vals": v.astype(np.float32), "offsets": o.astype(np.int32), **guarded})
        for name, v, o in made
    ]


def segment_max(vals, offsets):
    """The maximum of each segment (LOWEST when empty), in float32."""
    out = np.full(len(offsets) - 1, LOWEST, dtype=np.float32)
    full = np.flatnonzero(offsets[1:] > offsets[:-1])
    if full.size:
        # consecutive non-empty segments are adjacent (empty ones between have no values), and
        # the last one ends where the segmented range does
        inside = vals[offsets[0] : offsets[-1]]
        out[full] = np.maximum.reduceat(inside, offsets[full] - offsets[0])
    return out


def expect(got, vals, offsets, what):
    segs = len(offsets) - 1
    want = segment_max(vals, offsets)
    found = exact(got[:segs].view(np.uint32), want.view(np.uint32), f"{what} (bits)")
    return found + guard(got[segs:], f"{what} past the end")


def check(case, out):
    g = int(case["guard"])
    if case.name == "perf":
        found = []
        for r in range(int(case["timed"])):
            offsets = case[f"offsets{r}"]
            got = out.array(f"out{r}", np.float32, (len(offsets) - 1 + g,))
            found += expect(got, case[f"vals{r}"], offsets, f"out{r}")
        return found
    offsets = case["offsets"]
    got = out.array("out", np.float32, (len(offsets) - 1 + g,))
    return expect(got, case["vals"], offsets, "out")


if __name__ == "__main__":
    main(cases, check)
