"""streams-pipeline's checker: draws every run's inputs and decides on the h_out the runner
copied the moment pipeline_process returned (trusted: it never sees solution code). Every
h_out[i] for i < n must be pipeline_op(h_in[i]) (16 steps of y = 0.75 y + 0.25 sin(y)), and
nothing past n written. The benchmark checks every output of every timed call."""

import numpy as np
from cudaenv_check import Case, close, guard, main

GUARD = 64  # poisoned floats after h_out[:n]: the solution must not write them
ATOL = RTOL = 1e-4  # see expect_out
SIZES = [0, 1, 1000, 65537, (3 << 20) + 17, 10_000_019]
CHUNK = 1 << 22  # elements per reference slice (bounded memory)


def draw(rng, count):
    return rng.uniform(-8.0, 8.0, count).astype(np.float32)


def perf_cases(rng):
    n = 1 << 24  # 64 MiB per direction per call
    timed = 4  # timed calls, each on its own input and output
    return [Case("perf", {"x": draw(rng, timed * n), "timed": np.int32(timed)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [Case(f"n{n}", {"x": draw(rng, n), "guard": np.int32(GUARD)}) for n in SIZES]


def pipeline_op(x):
    """The header's pipeline_op in float32 as the host evaluates it (within a few ulp of the
    float64 value: far inside the tolerance), slice by slice, in place."""
    out = x.astype(np.float32)
    s = np.empty(min(CHUNK, x.size), np.float32)
    for start in range(0, x.size, CHUNK):
        y = out[start : start + CHUNK]
        t = s[: y.size]
        for _ in range(16):
            np.sin(y, out=t)
            y *= np.float32(0.75)
            t *= np.float32(0.25)
            y += t
    return out


def expect_out(got, x, what):
    """Within 1e-4 absolute + 1e-4 relative: the device's sinf differs from the host's by
    a few ulp and the compiler may contract 0.75f*y + 0.25f*s into an FMA; over 16 contracting
    steps (|dy'/dy| <= 1) that stays far below the bound for |x| <= 8. The poison (a NaN) of
    an element never written fails."""
    return close(got, pipeline_op(x), what, atol=ATOL, rtol=RTOL)


def check(case, out):
    x = case["x"]
    if case.name == "perf":
        rows = x.reshape(int(case["timed"]), -1)
        found = []
        for r, row in enumerate(rows):
            found += expect_out(out.array(f"out{r}", np.float32, row.shape), row, f"out{r}")
        return found
    n, g = x.size, int(case["guard"])
    got = out.array("out", np.float32, (n + g,))
    return expect_out(got[:n], x, "h_out") + guard(got[n:], "h_out past the end")


if __name__ == "__main__":
    main(cases, check)
