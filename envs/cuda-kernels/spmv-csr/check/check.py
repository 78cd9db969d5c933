"""spmv-csr's checker: draws every run's sparse matrices and decides on the y the runner wrote
(trusted: it never sees solution code). y[r] = sum over row r's entries of vals[e] * x[col[e]]."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after y: the solution must not write them
EPS = float(np.finfo(np.float32).eps)


# Row lengths of each case, as functions of (rng, number of rows).
def _zero(rng, n):
    return np.zeros(n, dtype=np.int64)


def _below(m):
    return lambda rng, n: rng.integers(0, m, n)


def _every(m):
    return lambda rng, n: np.arange(n) % m


def _mixed(rng, n):  # mostly under 9, every 997th row 3000..4999 (denser than the columns)
    return np.where(np.arange(n) % 997 == 0, rng.integers(3000, 5000, n), rng.integers(0, 9, n))


def _long_rows(rng, n):  # 40..159, every 13th row empty
    return np.where(np.arange(n) % 13 == 0, 0, rng.integers(40, 160, n))


def _power_law(rng, n):  # 90% under 6, 9% 50..249, 1% 2000..4997
    u = rng.integers(0, 1000, n)
    return np.where(u < 900, u % 6, np.where(u < 990, 50 + u % 200, 2000 + u * 3))


# name, rows, columns, small-integer data (then exact), row lengths
TESTS = [
    ("no-rows", 0, 5, False, _zero),
    ("1x1", 1, 1, False, lambda rng, n: np.ones(n, dtype=np.int64)),
    ("all-rows-empty", 50, 40, False, _zero),
    ("single-column", 3000, 1, True, _below(2)),
    ("short-rows", 1000, 700, False, _below(21)),
    ("odd-row-count", 777, 333, True, _every(7)),
    ("mixed-lengths", 20000, 5000, True, _mixed),
    ("one-dense-row", 1, 200000, True, lambda rng, n: np.full(n, 200000)),
    ("long-rows-few-empty", 4000, 3000, False, _long_rows),
    ("medium-random", 100000, 100000, False, _below(81)),
    ("power-law", 60000, 60000, True, _power_law),
]


def columns(rng, lengths, n_cols):
    """Each row's distinct columns, in random order: where a row holds more than a quarter of
    the columns, a shuffled window of them (wrapping) from a random start; else independent
    uniform draws, the later of two equal columns in a row drawn again until none are. Rows
    are handled in buckets of similar length, each row a line of a padded 2-D array."""
    starts = np.concatenate([[0], np.cumsum(lengths)])
    col = np.empty(int(starts[-1]), dtype=np.int32)
    for r in np.flatnonzero(4 * lengths > n_cols):
        window = (rng.integers(0, n_cols) + np.arange(lengths[r])) % n_cols
        col[starts[r] : starts[r + 1]] = rng.permutation(window)
    sparse = np.flatnonzero((4 * lengths <= n_cols) & (lengths > 0))
    bucket = np.zeros(sparse.size, dtype=np.int64)  # log2 of a power of two >= the length
    while np.any(short := (1 << bucket) < lengths[sparse]):
        bucket += short
    for b in np.flatnonzero(np.bincount(bucket)):
        w, rows = 1 << int(b), sparse[bucket == b]
        used = np.arange(w) < lengths[rows][:, None]
        pad = n_cols + np.arange(w)  # past every column: never equal to a drawn one
        draws = np.where(used, rng.integers(0, n_cols, used.shape), pad)
        redo = np.arange(rows.size)
        while redo.size:  # rows with two equal columns (a sort finds them) ...
            ordered = np.sort(draws[redo], axis=1)
            redo = redo[np.any(ordered[:, 1:] == ordered[:, :-1], axis=1)]
            if redo.size:  # ... draw the later of each pair again
                order = np.argsort(draws[redo], axis=1, kind="stable")
                ranked = np.take_along_axis(draws[redo], order, axis=1)
                line, at = np.nonzero(ranked[:, 1:] == ranked[:, :-1])
                draws[redo[line], order[line, at + 1]] = rng.integers(0, n_cols, line.size)
        col[(starts[rows][:, None] + np.arange(w))[used]] = draws[used]
    return col


def values(rng, count, ints):
    if ints:
        return rng.integers(-4, 4, count, endpoint=True).astype(np.float32)
    return rng.uniform(-1.0, 1.0, count).astype(np.float32)


def matrix(rng, n_rows, n_cols, ints, lengths):
    lengths = np.minimum(np.asarray(lengths, dtype=np.int64), n_cols)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    col = columns(rng, lengths, n_cols)
    return {
        "row_ptr": row_ptr,
        "col_idx": col,
        "vals": values(rng, col.size, ints),
        "x": values(rng, n_cols, ints),
        "exact": np.bool_(ints),
        "guard": np.int32(GUARD),
    }


def perf_case(rng, n, timed):
    """An n x n matrix with 0..63 entries per row (about 31.5 n in all), timed calls each with
    its own y."""
    inputs = matrix(rng, n, n, False, rng.integers(0, 64, n))
    return Case("perf", {**inputs, "calls": np.int32(timed)})


def perf_cases(rng):
    n = 1 << 20
    timed = 5  # timed calls on the same matrix and x, each writing its own y
    return [perf_case(rng, n, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [Case(name, matrix(rng, r, c, i, f(rng, r))) for name, r, c, i, f in TESTS]


def reference(case):
    """y in float64, and each row's tolerance: a float dot product of len terms, in any order,
    with or without FMA, is within len * FLT_EPSILON * S of the exact value (S = sum |a_e *
    x_c|); twice that plus 1e-6 is allowed. Small-integer data: every partial sum is an integer
    below 2^24, exact in float in any order, so the tolerance is 0."""
    row_ptr = case["row_ptr"].astype(np.int64)
    n_rows = row_ptr.size - 1
    prod = case["vals"].astype(np.float64) * case["x"].astype(np.float64)[case["col_idx"]]
    rows = np.repeat(np.arange(n_rows), np.diff(row_ptr))
    y = np.bincount(rows, weights=prod, minlength=n_rows)
    mag = np.bincount(rows, weights=np.abs(prod), minlength=n_rows)
    tol = 0.0 if bool(case["exact"]) else 1e-6 + 2.0 * np.diff(row_ptr) * EPS * mag
    return y, tol


def expect_y(got, want, what):
    y, tol = want
    n = y.size
    return close(got[:n], y, what, tol=tol) + guard(got[n:], f"{what} past the end")


def check(case, out):
    want, g = reference(case), int(case["guard"])
    shape = (want[0].size + g,)
    if case.name != "perf":
        got = out.array("y", np.float32, shape)
        if bool(case["exact"]):
            return exact(got[: want[0].size], want[0], "y") + guard(
                got[want[0].size :], "y past the end"
            )
        return expect_y(got, want, "y")
    found = []
    for t in range(int(case["calls"])):
        found += expect_y(out.array(f"y{t}", np.float32, shape), want, f"y{t}")
    return found


if __name__ == "__main__":
    main(cases, check)
