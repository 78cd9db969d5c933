"""What the tensor-permutation families share: the permutations, the test shapes, the index
algebra (strides of the input and of the output, by input axis) written as code."""

from __future__ import annotations

import itertools

from cudaenv.families.base import Params

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
PERF = {2: (4096, 4096), 3: (64, 256, 1024), 4: (16, 64, 128, 128)}
DIMS = ("d0", "d1", "d2", "d3")


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
