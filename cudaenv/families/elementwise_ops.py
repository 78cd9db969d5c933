"""The elementwise family's one definition, shared by its C++ and Python renderings: the parameter
space (a drawn expression tree over one to three inputs, their broadcasting, the element type),
the label, the compute type, the test cases and the benchmark (the reference semantics, with
the node-by-node error bound, are ``refs/elementwise.py``)."""

from __future__ import annotations

import random

from cudaenv.families import expr
from cudaenv.families.base import Limits, Params, Space
from cudaenv.families.checks import Cases, tests

DTYPES = ("f32", "f64", "f16")
BCAST = ("full", "row", "col")
FN = "fused_elementwise"
SIZES = ("rows", "cols")
# C++ test shapes; Python: the small ones on numba-cuda's simulator, the rest on a GPU
SHAPES = [(0, 7), (1, 1), (1, 33), (3, 5), (7, 32), (5, 1000), (64, 257), (1000, 1),
          (20000, 3), (3, 100003), (300, 4099), (1024, 1024)]  # fmt: skip
SIM_SHAPES = [(0, 7), (1, 1), (1, 33), (3, 5), (7, 32), (5, 70)]
GPU_SHAPES = [(64, 257), (1000, 1), (20000, 3), (3, 100003), (300, 4099), (1024, 1024)]
PERF = (2048, 2048)
SIM_PERF = (5, 37)
CALLS = 3  # timed calls, each on its own inputs and output


def compute_type(dtype: str) -> tuple[str, float]:
    """The type the expression is evaluated in, and its unit roundoff."""
    return ("double", 2.0**-53) if dtype == "f64" else ("float", 2.0**-24)


def draw_params(rng: random.Random, dtypes: tuple[str, ...]) -> Params:
    depth = rng.choice((1, 2, 2, 3, 3))
    n = rng.choice((1, 2, 2, 3, 3)[: 3 if depth == 1 else 5])
    bcast = ["full"] + [rng.choice(BCAST) for _ in range(n - 1)]
    return {"dtype": rng.choice(dtypes), "expr": expr.draw(rng, n, depth), "bcast": bcast}


def label(p: Params) -> str:
    bc = "".join(b[0] for b in p["bcast"])
    return f"{len(p['bcast'])}in-{bc}-d{expr.depth(p['expr'])}-{p['dtype']}"


class ElementwiseSpace(Space):
    """Drawn, not listed: expression trees are too many to list."""

    def draw(self, rng: random.Random, limits: Limits) -> Params:
        return draw_params(rng, tuple(limits.get("dtype", DTYPES)))

    def label(self, params: Params) -> str:
        return label(params)

    def invalid(self, params: Params, limits: Limits) -> str | None:
        bc, tree = params.get("bcast"), params.get("expr")
        if set(params) != {"dtype", "expr", "bcast"}:
            return "params"
        if params["dtype"] not in limits.get("dtype", DTYPES):
            return "dtype"
        if not isinstance(bc, list) or not bc or bc[0] != "full" or any(b not in BCAST for b in bc):
            return "bcast"
        if expr.leaves(tree) != {f"x{i}" for i in range(len(bc))}:
            return "expr"
        return None


SPACE = ElementwiseSpace()


def difficulty(params: Params) -> str:
    score = expr.depth(params["expr"]) - 1 + (params["dtype"] == "f16")
    score += any(b != "full" for b in params["bcast"])
    return "easy" if score <= 1 else "medium" if score <= 2 else "hard"


def work(p: Params, size: int) -> dict:
    """``metadata.work``: every timed call reads its inputs and writes ``out`` once."""
    rows, cols = PERF
    n = rows * cols
    in_elems = sum({"full": n, "row": cols, "col": rows}[b] for b in p["bcast"])
    return {
        "flops": CALLS * n * expr.size(p["expr"]),
        "bytes": CALLS * (in_elems + n) * size,
        "dtype": "fp64" if p["dtype"] == "f64" else "fp32",  # half data, float math
    }


def cpp_cases(p: Params) -> Cases:
    return Cases(
        tests(SHAPES, SIZES, ("uniform",)), dict(zip(SIZES, PERF, strict=True)), CALLS, "uniform"
    )


def py_cases(p: Params) -> Cases:
    return Cases(
        tests(SIM_SHAPES, SIZES, ("uniform",), host=(1, 2)),
        dict(zip(SIZES, PERF, strict=True)),
        CALLS,
        "uniform",
        gpu_tests=tests(GPU_SHAPES, SIZES, ("uniform",), first=len(SIM_SHAPES)),
        sim_perf=dict(zip(SIZES, SIM_PERF, strict=True)),
    )
