"""The permute family's one definition, shared by its C++ and Python renderings: the parameter
space (the permutations, the element types), the test cases, the benchmark, and the index
algebra (strides of the input and of the output, by input axis) written as code (the reference
semantics are ``refs/permute.py``)."""

from __future__ import annotations

import itertools

from cudaenv.families.base import Listed, Params
from cudaenv.families.checks import Cases, tests

PERMS = [
    list(p)
    for r in (2, 3, 4)
    for p in itertools.permutations(range(r))
    if list(p) != list(range(r))
]
SHAPES = {
    2: [(0, 5), (1, 1), (1, 33), (3, 5), (33, 65), (64, 64), (1000, 3), (3, 1000), (1025, 1027)],
    3: [(0, 3, 4), (1, 1, 1), (2, 3, 5), (7, 33, 65), (64, 1, 32), (5, 100, 3), (128, 128, 33),
        (17, 257, 129)],
    4: [(2, 0, 3, 4), (1, 1, 1, 1), (2, 3, 5, 7), (3, 33, 2, 65), (8, 8, 8, 8), (4, 64, 5, 33),
        (16, 17, 32, 33)],
}  # fmt: skip
# Python: small shapes on numba-cuda's simulator, a few large ones on a GPU
SIM_SHAPES = {2: [(0, 5), (1, 1), (3, 5), (33, 40)], 3: [(0, 3, 4), (1, 1, 1), (2, 3, 5), (3, 33, 7)],
              4: [(2, 0, 3, 4), (1, 1, 1, 1), (2, 3, 5, 7), (3, 2, 33, 2)]}  # fmt: skip
GPU_SHAPES = {2: [(1000, 3), (1025, 1027)], 3: [(64, 1, 32), (17, 257, 129)],
              4: [(8, 8, 8, 8), (16, 17, 32, 33)]}  # fmt: skip
PERF = {2: (2048, 2048), 3: (16, 256, 1024), 4: (4, 64, 128, 128)}
SIM_PERF = {2: (9, 37), 3: (3, 5, 37), 4: (2, 3, 5, 7)}
CALLS = 3  # timed calls, each on its own input and output
DIMS = ("d0", "d1", "d2", "d3")
DTYPES = ("f32", "f64", "f16", "i32")
SIZE = {"f32": 4, "f64": 8, "f16": 2, "i32": 4}
DT = {"f32": "fp32", "f64": "fp64", "f16": "fp16", "i32": "int32"}


def label(p: Params) -> str:
    return f"{''.join(map(str, p['perm']))}-{p['dtype']}"


#: the family's parameter space (the Python rendering: no half)
SPACE = Listed(lambda: [{"perm": p, "dtype": d} for p in PERMS for d in DTYPES], label)


def work(p: Params) -> dict:
    """``metadata.work``: every timed call reads ``x`` and writes ``y`` once (no arithmetic)."""
    n = 1
    for d in PERF[len(p["perm"])]:
        n *= d
    return {"flops": 0, "bytes": CALLS * 2 * n * SIZE[p["dtype"]], "dtype": DT[p["dtype"]]}


def cpp_cases(p: Params) -> Cases:
    n = len(p["perm"])
    sizes = DIMS[:n]
    return Cases(
        tests(SHAPES[n], sizes, ("uniform",)),
        dict(zip(sizes, PERF[n], strict=True)),
        CALLS,
        "uniform",
    )


def py_cases(p: Params) -> Cases:
    n = len(p["perm"])
    sizes = DIMS[:n]
    return Cases(
        tests(SIM_SHAPES[n], sizes, ("uniform",), host=(1, 2)),
        dict(zip(sizes, PERF[n], strict=True)),
        CALLS,
        "uniform",
        gpu_tests=tests(GPU_SHAPES[n], sizes, ("uniform",), first=len(SIM_SHAPES[n])),
        sim_perf=dict(zip(sizes, SIM_PERF[n], strict=True)),
    )


def name(perm: list[int]) -> str:
    return "permute_" + "".join(map(str, perm))


def tiled(perm: list[int]) -> bool:
    """The innermost axis moves (a shared-memory tile transposes it); else rows are copied."""
    return perm[-1] != len(perm) - 1


def in_strides(n: int) -> list[str]:
    """C expressions (size_t) of the input's strides, by axis."""
    return ["*".join(["(size_t)1", *DIMS[k + 1 : n]]) for k in range(n)]


def out_strides(perm: list[int]) -> list[str]:
    """The output's stride of each input axis: output axis k is input axis perm[k]."""
    n = len(perm)
    by_out = ["*".join(["(size_t)1", *(DIMS[perm[m]] for m in range(k + 1, n))]) for k in range(n)]
    return [by_out[perm.index(q)] for q in range(n)]


def out_shape_text(perm: list[int]) -> str:
    return "(" + ", ".join(DIMS[q] for q in perm) + ")"


def difficulty(p: Params) -> str:
    score = (len(p["perm"]) - 2) + tiled(p["perm"]) + (p["dtype"] == "f16")
    return "easy" if score <= 1 else "medium" if score <= 2 else "hard"
