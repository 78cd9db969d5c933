"""stencil-jacobi2d's checker: draws every run's grids and decides on the grids the runner
wrote after chains of Jacobi steps (trusted: it never sees solution code). Boundary cells are
copied; every interior cell becomes 0.25f * ((up + down) + (left + right))."""

import numpy as np
from cudaenv_check import Case, exact, guard, main, mismatch

GUARD = 64  # poisoned floats after each of the two buffers: the solution must not write them
# Boundary cells are copies and must match bit for bit. Interior cells: values stay in [0, 1]
# and each step sums four floats and scales by 0.25 (exact), so another summation order or
# FMA use changes a cell by a few ulps (< 1e-7); averaging never amplifies earlier
# differences, so 1e-5 absolute is a safe bound over the 10-20 steps used here, while any
# wrong neighbour or missed cell is off by far more.
ATOL = 1e-5
# nx, ny, steps (the chains ping-pong two buffers)
SHAPES = [
    (0, 0, 1), (0, 5, 1), (5, 0, 1), (1, 1, 2), (7, 1, 2), (1, 7, 2), (2, 5, 2), (5, 2, 2),
    (3, 3, 3), (4, 5, 4), (17, 33, 5), (33, 17, 5), (1000, 3, 3), (3, 1000, 3),
    (257, 129, 20), (1024, 768, 10), (4099, 2051, 4),
]  # fmt: skip


def grid(rng, nx, ny):
    """Uniform in [0, 1), a hot edge (row 0 all 1.0) and a warm one (column nx - 1 in
    [0.5, 1), below row 0)."""
    g = rng.random((ny, nx), dtype=np.float32)
    if nx and ny:
        g[1:, nx - 1] = 0.5 + 0.5 * g[1:, nx - 1]
        g[0, :] = 1.0
    return g


def perf_case(rng, nx, ny, steps):
    inputs = {"grid": grid(rng, nx, ny), "steps": np.int32(steps)}
    return Case("perf", {**inputs, "guard": np.int32(GUARD)})


def perf_cases(rng):
    nx = 8192
    ny = 4096
    steps = 10  # timed chained steps, every one reading the previous step's output
    return [perf_case(rng, nx, ny, steps)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [
        Case(
            f"{nx}x{ny}-steps{s}",
            {"grid": grid(rng, nx, ny), "steps": np.int32(s), "guard": np.int32(GUARD)},
        )
        for nx, ny, s in SHAPES
    ]


def step(g):
    """One step in float32, in the prompt's order of operations."""
    out = g.copy()
    if g.shape[0] > 2 and g.shape[1] > 2:
        up, down, left, right = g[:-2, 1:-1], g[2:, 1:-1], g[1:-1, :-2], g[1:-1, 2:]
        out[1:-1, 1:-1] = np.float32(0.25) * ((up + down) + (left + right))
    return out


def expect_grid(got, want, what):
    """Boundary cells bitwise, interior cells within ATOL (a NaN never passes)."""
    if got.size != want.size:
        return [f"{what}: {got.size} cells, expected {want.size}"]
    got = got.reshape(want.shape)
    edge = np.zeros(want.shape, dtype=bool)
    if want.size:
        edge[[0, -1], :] = True
        edge[:, [0, -1]] = True
    same = got.view(np.uint32) == want.view(np.uint32)
    near = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= ATOL
    return mismatch(
        what, ~np.where(edge, same, near), got, want, " (boundary bitwise, interior 1e-5)"
    )


def check(case, out):
    g, pad, steps = case["grid"], int(case["guard"]), int(case["steps"])
    cells = g.size
    first = previous = last = g
    for s in range(steps):
        previous, last = last, step(last)
        first = last if s == 0 else first
    final = out.array("final", np.float32, (cells + pad,))
    found = expect_grid(final[:cells], last, "final") + guard(final[cells:], "final past the end")
    spare = out.array("other_guard", np.float32, (pad,))
    found += guard(spare, "the other buffer past the end")
    if case.name == "perf":  # the other buffer holds the next-to-last timed step's output
        return found + expect_grid(
            out.array("previous", np.float32, (cells,)), previous, "previous"
        )
    return found + expect_grid(out.array("first", np.float32, (cells,)), first, "first step")


if __name__ == "__main__":
    main(cases, check)
