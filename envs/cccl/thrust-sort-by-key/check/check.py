"""thrust-sort-by-key's checker: draws every run's cases and decides on the arrays the runner
wrote (trusted: it never sees solution code). (cell, id) sorted in place by cell, ascending and
stable, compared exactly; the sentinel after each array untouched."""

import numpy as np
from cudaenv_check import Case, exact, main

SENTINEL = -12345  # the element after each array: not to be touched

# name, n, cells (cell values uniform in [0, cells)); ids are arbitrary ints
TESTS = [
    ("empty", 0, 1),
    ("single", 1, 1),
    ("two", 2, 2),
    ("all-equal", 1000, 1),  # every key equal: the ids keep the input order
    ("sixteen-cells", 4097, 16),
    ("as-many-cells", 100003, 100003),
    ("full-key-range", 1000000, 1 << 24),
    ("three-million", 3000017, 5000),
]


def draw(rng, n, cells):
    cell = rng.integers(0, cells, n, dtype=np.int32)
    return cell, rng.integers(-(2**31), 2**31, n, dtype=np.int32)


def perf_cases(rng):
    n = 1 << 22
    cells = 1 << 18
    timed = 5  # each call sorts its own pairs in place
    warmup = 3
    pairs = [draw(rng, n, cells) for _ in range(timed)]
    inputs = {"cell": np.stack([c for c, _ in pairs]), "id": np.stack([i for _, i in pairs])}
    return [Case("perf", {**inputs, "warmup": np.int32(warmup)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, cells in TESTS:
        cell, ids = draw(rng, n, cells)
        cell, ids = np.append(cell, np.int32(SENTINEL)), np.append(ids, np.int32(SENTINEL))
        out.append(Case(name, {"cell": cell, "id": ids, "n": np.int32(n)}))
    return out


def expect(out, suffix, cell, ids, n):
    """The arrays after one call: the first n pairs stably sorted, the rest untouched."""
    order = np.argsort(cell[:n], kind="stable")
    got_cell = out.array(f"cell{suffix}", np.int32, cell.shape)
    got_id = out.array(f"id{suffix}", np.int32, ids.shape)
    found = exact(got_cell[:n], cell[order], f"cell{suffix}")
    found += exact(got_id[:n], ids[order], f"id{suffix}")
    found += exact(got_cell[n:], cell[n:], f"cell{suffix} past the end")
    return found + exact(got_id[n:], ids[n:], f"id{suffix} past the end")


def check(case, out):
    if case.name == "perf":
        timed, n = case["cell"].shape
        return [
            m for r in range(timed) for m in expect(out, str(r), case["cell"][r], case["id"][r], n)
        ]
    return expect(out, "", case["cell"], case["id"], int(case["n"]))


if __name__ == "__main__":
    main(cases, check)
