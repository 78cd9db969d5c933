"""softmax-rows's checker: draws every run's matrices and decides on the softmax rows the
runner wrote (trusted: it never sees solution code).
out[r][j] = exp(in[r][j] - m_r) / sum_k exp(in[r][k] - m_r), m_r = max_k in[r][k]."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after out: the solution must not write them
# |got - exact| <= 1e-4 * exact + 1e-10 per element, exact in double. expf is accurate to a
# few ulp for the arguments that matter, and a float row sum over up to 2^18 terms built from
# per-thread partials combined as a tree stays within ~1e-5 relative (a single serial float
# accumulator drifts by ~2e-4 there and fails); 1e-10 absolute covers results that underflow
# (or flush) to zero. An implementation that does not subtract the row max overflows on the
# shifted rows and fails.
RTOL, ATOL = 1e-4, 1e-10
# rows, cols of the uniform cases: very short rows (1 or 3 columns, many rows) to 2^18 columns
SHAPES = [
    (1, 1), (1, 7), (3, 5), (2, 32), (5, 33), (64, 1000), (1000, 64), (17, 4099), (300, 2048),
    (4, 100003), (2, 262144), (4096, 1), (70001, 3),
]  # fmt: skip
# the other kinds: name, rows, cols
KINDS = [
    ("shifted", 40, 1537), ("shifted", 5, 77777), ("wide", 50, 3001), ("masked", 123, 777),
    ("masked", 3, 5), ("one-hot", 33, 2500), ("constant", 9, 10007),
]  # fmt: skip


def uniform(rng, lo, hi, shape):
    return (lo + (hi - lo) * rng.random(shape)).astype(np.float32)


def matrix(rng, rows, cols, kind):
    """uniform in [-10, 10); shifted: row r offset by 400 * (r % 5) - 900 (|x| up to ~930, so
    exp without the max overflows), plus [-30, 30); wide: [-100, 100); masked: 30% -inf, the
    rest in [-5, 5); one-hot: one finite entry per row; constant: 3.5. Every row has a finite
    entry (masked and one-hot rows get one at a random column)."""
    shape = (rows, cols)
    if kind == "uniform":
        return uniform(rng, -10.0, 10.0, shape)
    if kind == "shifted":
        shift = (400.0 * (np.arange(rows) % 5) - 900.0).astype(np.float32)[:, None]
        return (shift + uniform(rng, -30.0, 30.0, shape)).astype(np.float32)
    if kind == "wide":
        return uniform(rng, -100.0, 100.0, shape)
    if kind == "constant":
        return np.full(shape, 3.5, dtype=np.float32)
    x = np.full(shape, -np.inf, dtype=np.float32)
    if kind == "masked":
        x = np.where(rng.random(shape) < 0.3, x, uniform(rng, -5.0, 5.0, shape))
    x[np.arange(rows), rng.integers(0, cols, rows)] = uniform(rng, -5.0, 5.0, rows)
    return x


def case(name, rng, rows, cols, kind):
    return Case(name, {"in": matrix(rng, rows, cols, kind), "guard": np.int32(GUARD)})


def perf_case(rng, rows, cols, R):
    """Timed call r reads rows r .. r + rows - 1 of a shifted input, into its own output."""
    inputs = {"in": matrix(rng, rows + R, cols, "shifted"), "rows": np.int32(rows)}
    return Case("perf", {**inputs, "calls": np.int32(R), "guard": np.int32(GUARD)})


def perf_cases(rng):
    rows = 2048
    cols = 8192
    R = 4  # timed calls, each on its own window of rows, each with its own output
    return [perf_case(rng, rows, cols, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case("empty-0x5", rng, 0, 5, "uniform")]
    out += [case(f"uniform-{r}x{c}", rng, r, c, "uniform") for r, c in SHAPES]
    return out + [case(f"{kind}-{r}x{c}", rng, r, c, kind) for kind, r, c in KINDS]


def softmax(x):
    """The exact rows in float64 (a masked entry's exp is 0)."""
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def expect_out(got, x, what):
    n = x.size
    want = softmax(x).reshape(-1) if n else np.zeros(0)
    found = close(got[:n], want, what, tol=RTOL * want + ATOL)
    return found + guard(got[n:], f"{what} past the end")


def check(case, out):
    x, g = case["in"], int(case["guard"])
    if case.name == "perf":
        rows, found = int(case["rows"]), []
        for r in range(int(case["calls"])):
            got = out.array(f"out{r}", np.float32, (rows * x.shape[1] + g,))
            found += expect_out(got, x[r : r + rows], f"out{r}")
        return found
    found = expect_out(out.array("out", np.float32, (x.size + g,)), x, "out")
    return found + exact(out.array("in_after", np.float32, x.shape), x, "in (modified by the call)")


if __name__ == "__main__":
    main(cases, check)
