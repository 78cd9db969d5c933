"""The stencil family's one definition, shared by its C++ and Python renderings: the parameter
space (drawn: the taps' offsets and dyadic weights, exact in every type, the boundary modes,
the element type), the tolerance (any summation order of the taps), the test cases and the
benchmark (the reference semantics are ``refs/stencil.py``)."""

from __future__ import annotations

import random

from cudaenv.families.base import Limits, Params, Space
from cudaenv.families.checks import Cases, tests

WEIGHTS = (-2.0, -1.0, -0.5, -0.25, 0.125, 0.25, 0.5, 1.0, 2.0)
BOUNDARIES = ("clamp", "zero", "wrap", "mirror")
WRONG_BOUNDARY = {"clamp": "zero", "zero": "clamp", "wrap": "clamp", "mirror": "clamp"}
SHAPES_1D = [(0,), (1,), (2,), (5,), (31,), (32,), (33,), (257,), (1000,), (100003,), (1 << 20,)]
SHAPES_2D = [(0, 5), (1, 1), (1, 7), (3, 5), (7, 33), (33, 7), (64, 257), (1000, 3), (3, 1000),
             (300, 301), (1024, 1024)]  # fmt: skip
DTYPES = ("f32", "f64", "f16")
# Python: small shapes on numba-cuda's simulator, the rest on a GPU
SIM_SHAPES = {
    1: [(0,), (1,), (2,), (5,), (33,), (257,)],
    2: [(0, 5), (1, 1), (1, 7), (3, 5), (7, 33), (33, 7)],
}
GPU_SHAPES = {1: [(1000,), (100003,), (1 << 20,)],
              2: [(64, 257), (1000, 3), (3, 1000), (1024, 1024)]}  # fmt: skip
PERF_1D = (1 << 22,)
PERF_2D = (2048, 2048)
SIM_PERF = {1: (300,), 2: (9, 37)}
CALLS = 3  # timed calls, each on its own input and output


def taps(p: Params) -> list[tuple[int, int, float]]:
    """(row offset, column offset, weight) of every tap; 1-D stencils have row offset 0."""
    r = p["radius"]
    if p["dim"] == 1:
        offs = [(0, k) for k in range(-r, r + 1)]
    elif p["shape"] == "box":
        offs = [(a, b) for a in range(-r, r + 1) for b in range(-r, r + 1)]
    else:
        offs = (
            [(0, 0)]
            + [(a, 0) for a in range(-r, r + 1) if a]
            + [(0, b) for b in range(-r, r + 1) if b]
        )
        offs.sort()
    return [(a, b, w) for (a, b), w in zip(offs, p["weights"], strict=True)]


def n_taps(dim: int, shape: str, radius: int) -> int:
    if dim == 1:
        return 2 * radius + 1
    return (2 * radius + 1) ** 2 if shape == "box" else 4 * radius + 1


def draw(rng: random.Random, dtypes: tuple[str, ...]) -> Params:
    dim = rng.choice((1, 2))
    radius = rng.choice((1, 2, 3)) if dim == 1 else rng.choice((1, 1, 2))
    shape = "line" if dim == 1 else rng.choice(("box", "cross"))
    weights = [rng.choice(WEIGHTS) for _ in range(n_taps(dim, shape, radius))]
    return {"dim": dim, "radius": radius, "shape": shape, "weights": weights,
            "boundary": rng.choice(BOUNDARIES), "dtype": rng.choice(dtypes)}  # fmt: skip


def invalid(p: Params, dtypes: tuple[str, ...]) -> str | None:
    """The field that makes ``p`` no stencil (None: a stencil)."""
    if set(p) != {"dim", "radius", "shape", "weights", "boundary", "dtype"}:
        return "params"
    checks = {
        "dim": p["dim"] in (1, 2),
        "radius": p["radius"] in (1, 2, 3),
        "shape": p["shape"] in (("line",) if p["dim"] == 1 else ("box", "cross")),
        "boundary": p["boundary"] in BOUNDARIES,
        "dtype": p["dtype"] in dtypes,
        "weights": isinstance(p["weights"], list)
        and len(p["weights"]) == n_taps(p["dim"], p["shape"], p["radius"])
        and all(w in WEIGHTS for w in p["weights"]),
    }
    return next((k for k, ok in checks.items() if not ok), None)


def label(p: Params) -> str:
    shape = "" if p["dim"] == 1 else f"-{p['shape']}"
    return f"{p['dim']}d{shape}-r{p['radius']}-{p['boundary']}-{p['dtype']}"


class StencilSpace(Space):
    """Drawn, not listed: the weights make too many stencils to list."""

    def draw(self, rng: random.Random, limits: Limits) -> Params:
        return draw(rng, tuple(limits.get("dtype", DTYPES)))

    def label(self, params: Params) -> str:
        return label(params)

    def invalid(self, params: Params, limits: Limits) -> str | None:
        return invalid(params, tuple(limits.get("dtype", DTYPES)))


SPACE = StencilSpace()


def sizes_of(p: Params) -> tuple[str, ...]:
    return ("n",) if p["dim"] == 1 else ("rows", "cols")


def perf_shape(p: Params) -> tuple[int, ...]:
    return PERF_1D if p["dim"] == 1 else PERF_2D


def work(p: Params, size: int) -> dict:
    """``metadata.work``: every timed call reads ``x`` and writes ``y`` once; a tap is a
    multiply and an add (the first no add)."""
    n = PERF_1D[0] if p["dim"] == 1 else PERF_2D[0] * PERF_2D[1]
    t = n_taps(p["dim"], p["shape"], p["radius"])
    return {"flops": CALLS * n * (2 * t - 1), "bytes": CALLS * 2 * n * size,
            "dtype": "fp64" if p["dtype"] == "f64" else "fp32"}  # fmt: skip


def cpp_cases(p: Params) -> Cases:
    shapes = SHAPES_1D if p["dim"] == 1 else SHAPES_2D
    perf = dict(zip(sizes_of(p), perf_shape(p), strict=True))
    return Cases(tests(shapes, sizes_of(p), ("uniform",)), perf, CALLS, "uniform")


def py_cases(p: Params) -> Cases:
    names = sizes_of(p)
    return Cases(
        tests(SIM_SHAPES[p["dim"]], names, ("uniform",), host=(1, 2)),
        dict(zip(names, perf_shape(p), strict=True)),
        CALLS,
        "uniform",
        gpu_tests=tests(GPU_SHAPES[p["dim"]], names, ("uniform",), first=len(SIM_SHAPES[p["dim"]])),
        sim_perf=dict(zip(names, SIM_PERF[p["dim"]], strict=True)),
    )


def boundary_text(mode: str) -> str:
    return {
        "clamp": "an index outside `[0, n)` is clamped to the nearest edge (`x[-2]` reads `x[0]`)",
        "zero": "an element outside the array counts as 0",
        "wrap": "indices wrap around (`x[-1]` reads `x[n-1]`, `x[n]` reads `x[0]`)",
        "mirror": "indices reflect at the edges without repeating them (`x[-1]` reads `x[1]`, "
        "`x[n]` reads `x[n-2]`; repeatedly, with period `2n - 2`; for `n == 1` every index "
        "reads `x[0]`)",
    }[mode]


def taps_text(p: Params) -> str:
    terms = []
    for a, b, w in taps(p):
        idx = f"x[i{b:+d}]" if p["dim"] == 1 else f"x[r{a:+d}][c{b:+d}]"
        terms.append(f"{w:g} * {idx}".replace("+0]", "]"))
    return " + ".join(terms).replace("+ -", "- ")


def tolerance_text(p: Params, comp: str) -> str:
    t = n_taps(p["dim"], p["shape"], p["radius"])
    return (
        f"Checking: `|y - exact| <= {2 * t} * u * sum_k |w_k * x_k|` per element (`u` the unit "
        f"roundoff of {comp}, `exact` in double on the CPU): the weights are powers of two, so "
        "every product is exact and only the additions round, in any order"
        + ("." if p["dtype"] == "f16" else "; evaluating in a narrower type does not pass.")
    )


def difficulty(p: Params) -> str:
    score = (
        (p["dim"] - 1) + (p["radius"] >= 2) + (p["dtype"] == "f16") + (p["boundary"] == "mirror")
    )
    return "easy" if score <= 0 else "medium" if score <= 2 else "hard"
