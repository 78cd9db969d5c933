"""What the stencil families share: drawing the taps (offsets and dyadic weights, exact in
every type), the boundary modes, and the tolerance (any summation order of the taps)."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families.base import Params

WEIGHTS = (-2.0, -1.0, -0.5, -0.25, 0.125, 0.25, 0.5, 1.0, 2.0)
BOUNDARIES = ("clamp", "zero", "wrap", "mirror")
WRONG_BOUNDARY = {"clamp": "zero", "zero": "clamp", "wrap": "clamp", "mirror": "clamp"}
SHAPES_1D = [(0,), (1,), (2,), (5,), (31,), (32,), (33,), (257,), (1000,), (100003,), (1 << 20,)]
SHAPES_2D = [(0, 5), (1, 1), (1, 7), (3, 5), (7, 33), (33, 7), (64, 257), (1000, 3), (3, 1000),
             (300, 301), (1024, 1024)]  # fmt: skip
PERF_1D = (1 << 24,)
PERF_2D = (4096, 4096)


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


def check(name: str, p: Params, dtypes: tuple[str, ...]) -> Params:
    ok = (
        set(p) == {"dim", "radius", "shape", "weights", "boundary", "dtype"}
        and p["dim"] in (1, 2)
        and p["radius"] in (1, 2, 3)
        and p["shape"] in (("line",) if p["dim"] == 1 else ("box", "cross"))
        and p["boundary"] in BOUNDARIES
        and p["dtype"] in dtypes
        and isinstance(p["weights"], list)
        and len(p["weights"]) == n_taps(p["dim"], p["shape"], p["radius"])
        and all(w in WEIGHTS for w in p["weights"])
    )
    if not ok:
        raise SpecError(f"not a {name} parameter set: {p}", field="params")
    return p


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
