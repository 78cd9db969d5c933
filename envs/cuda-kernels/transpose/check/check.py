"""transpose's checker: draws every run's matrices and decides on the transposes the runner
wrote (trusted: it never sees solution code). out[c * rows + r] = in[r * cols + c], bit for bit."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 64  # poisoned floats after out: the solution must not write them
# rows, cols: from empty to 4097 x 3001 and 3000001 x 2 (gridDim.y is limited to 65535)
SHAPES = [
    (0, 5), (5, 0), (0, 0), (1, 1), (1, 37), (37, 1), (31, 33), (32, 32), (33, 31), (64, 96),
    (100, 1000), (1000, 100), (1023, 1025), (4097, 3001), (3, 100003), (100003, 3),
    (3000001, 2), (2, 3000001),
]  # fmt: skip
OFFSET = (257, 129, 1, 3)  # rows, cols, in/out element offsets (unaligned matrices)


def matrix(rng, rows, cols):
    """Distinct-looking finite values: floats in [1, 2) with random mantissas, random sign."""
    bits = rng.integers(0, 1 << 23, (rows, cols), dtype=np.uint32) | np.uint32(0x3F800000)
    bits |= rng.integers(0, 2, (rows, cols), dtype=np.uint32) << np.uint32(31)
    return bits.view(np.float32)


def case(name, rng, rows, cols, io=0, oo=0):
    inputs = {"in": matrix(rng, rows, cols), "in_offset": np.int64(io), "out_offset": np.int64(oo)}
    return Case(name, {**inputs, "guard": np.int32(GUARD)})


def perf_case(rng, A, B, R):
    """R timed calls on one buffer of A * B floats, viewed alternately as A x B and B x A."""
    inputs = {"in": matrix(rng, A, B).reshape(-1), "rows": np.int32([A, B]), "calls": np.int32(R)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    A = 5003
    B = 4001  # timed calls alternate between A x B and B x A
    R = 4  # timed calls, each with its own output
    return [perf_case(rng, A, B, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case(f"{r}x{c}", rng, r, c) for r, c in SHAPES]
    r, c, io, oo = OFFSET
    return [*out, case(f"{r}x{c}-offset", rng, r, c, io, oo)]


def expect_out(got, x, what):
    """got's first rows * cols floats are x transposed, bit for bit; then an intact guard."""
    n = x.size
    want = np.ascontiguousarray(x.T).reshape(-1).view(np.uint32)
    return exact(got[:n].view(np.uint32), want, f"{what} (bits)") + guard(
        got[n:], f"{what} past the end"
    )


def check(case, out):
    x, g = case["in"], int(case["guard"])
    if case.name != "perf":
        return expect_out(out.array("out", np.float32, (x.size + g,)), x, "out")
    found, rows = [], case["rows"].tolist()
    for r in range(int(case["calls"])):
        view = x.reshape(rows[r % 2], -1)
        found += expect_out(out.array(f"out{r}", np.float32, (x.size + g,)), view, f"out{r}")
    return found


if __name__ == "__main__":
    main(cases, check)
