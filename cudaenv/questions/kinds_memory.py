"""The ``bank`` and ``coalesce`` kinds: one warp's shared-memory or global access, written as
a kernel statement with its declarations and block shape; how many ways the bank conflict is,
or how many 32-byte sectors the request touches.

Truth: the models of :mod:`cudaenv.questions.memory`, applied to the byte address each lane
computes (hand-checked cases in the tests: stride 1, 2 and 32, the padded ``[32][33]`` tile).
The patterns are those the families' kernels use (strided and tiled shared arrays, transposes
through a padded tile, row and column reads of matrices, arrays of structs).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from cudaenv.questions import memory
from cudaenv.questions.model import Question

TYPES = {"float": 4, "double": 8, "__half": 2, "int": 4, "char": 1}


@dataclass(frozen=True)
class Pattern:
    decls: str  # declarations the statement reads
    stmt: str  # the statement one warp executes
    block: tuple[int, int]
    warp: int
    block_idx: tuple[int, int]
    elem: int  # bytes per access
    address: Callable[[int, int], int]  # (threadIdx.x, threadIdx.y) -> byte address


def _shared(rng: random.Random) -> Pattern:
    k = rng.randrange(5)
    if k == 0:
        s = rng.choice((1, 2, 3, 4, 5, 8, 16, 17, 32, 33, 64))
        return Pattern(f"__shared__ float s[{32 * s}];", f"float v = s[threadIdx.x * {s}];",
                       (32, 1), 0, (0, 0), 4, lambda tx, ty: 4 * tx * s)  # fmt: skip
    if k == 1:
        w, h = rng.choice((16, 31, 32, 33, 48, 64, 65)), 32
        c = rng.randrange(w)
        return Pattern(f"__shared__ float tile[{h}][{w}];", f"float v = tile[threadIdx.x][{c}];",
                       (32, 1), 0, (0, 0), 4, lambda tx, ty: 4 * (tx * w + c))  # fmt: skip
    if k == 2:
        bx, by = rng.choice(((16, 16), (8, 32), (32, 8), (4, 64)))
        w = rng.choice((bx, bx + 1, 32, 33))
        warp = rng.randrange(bx * by // 32)
        if rng.random() < 0.5:
            return Pattern(f"__shared__ float tile[{by}][{w}];", "float v = tile[threadIdx.y][threadIdx.x];",
                           (bx, by), warp, (0, 0), 4, lambda tx, ty: 4 * (ty * w + tx))  # fmt: skip
        w = rng.choice((by, by + 1, 32, 33))
        return Pattern(f"__shared__ float tile[{bx}][{w}];", "float v = tile[threadIdx.x][threadIdx.y];",
                       (bx, by), warp, (0, 0), 4, lambda tx, ty: 4 * (tx * w + ty))  # fmt: skip
    if k == 3:
        d = rng.choice((2, 4, 8))
        return Pattern("__shared__ int s[1024];", f"int v = s[threadIdx.x / {d}];",
                       (32, 1), 0, (0, 0), 4, lambda tx, ty: 4 * (tx // d))  # fmt: skip
    m = rng.choice((2, 4, 8, 16))
    stride = rng.choice((32, 64, 33, 16))
    return Pattern("__shared__ float s[2048];", f"float v = s[(threadIdx.x % {m}) * {stride}];",
                   (32, 1), 0, (0, 0), 4, lambda tx, ty: 4 * ((tx % m) * stride))  # fmt: skip


def _global(rng: random.Random) -> Pattern:
    k = rng.randrange(5)
    t = rng.choice(("float", "double", "__half", "int", "char"))
    e = TYPES[t]
    if k == 0:
        off = rng.choice((0, 0, 1, 3, 8, 16))
        b, warp = rng.randrange(4), rng.randrange(8)
        plus = f" + {off}" if off else ""
        return Pattern(f"const {t}* x;  // the start of a cudaMalloc allocation",
                       f"{t} v = x[blockIdx.x * blockDim.x + threadIdx.x{plus}];", (256, 1), warp, (b, 0), e,
                       lambda tx, ty: e * (b * 256 + tx + off))  # fmt: skip
    if k == 1:
        s = rng.choice((2, 3, 4, 8, 16, 32))
        return Pattern(f"const {t}* x;  // the start of a cudaMalloc allocation",
                       f"{t} v = x[threadIdx.x * {s}];", (32, 1), 0, (0, 0), e,
                       lambda tx, ty: e * tx * s)  # fmt: skip
    if k == 2:
        ld, c = rng.choice((3, 17, 100, 1000, 1024)), rng.randrange(3)
        return Pattern(f"const {t}* x;  // a row-major matrix with rows of {ld} elements, allocation start",
                       f"{t} v = x[threadIdx.x * {ld} + {c}];", (32, 1), 0, (0, 0), e,
                       lambda tx, ty: e * (tx * ld + c))  # fmt: skip
    if k == 3:
        bx = rng.choice((8, 16))
        ld = rng.choice((64, 100, 1000, 1024, 4099))
        by, bbx = rng.randrange(4), rng.randrange(4)
        warp = rng.randrange(bx * bx // 32)
        return Pattern(f"const {t}* x;  // a row-major matrix with rows of {ld} elements, allocation start",
                       f"{t} v = x[(blockIdx.y * {bx} + threadIdx.y) * {ld} + blockIdx.x * {bx} + threadIdx.x];",
                       (bx, bx), warp, (bbx, by), e,
                       lambda tx, ty: e * ((by * bx + ty) * ld + bbx * bx + tx))  # fmt: skip
    field, fb = rng.choice((("x", 0), ("y", 4), ("z", 8)))
    return Pattern("struct P { float x, y, z; };\nconst P* p;  // the start of a cudaMalloc allocation",
                   f"float v = p[threadIdx.x].{field};", (32, 1), 0, (0, 0), 4,
                   lambda tx, ty: 12 * tx + fb)  # fmt: skip


def _addresses(p: Pattern) -> list[int]:
    return [p.address(tx, ty) for tx, ty in memory.lanes(p.block[0], p.warp)]


def _where(p: Pattern) -> str:
    block = f"blockDim = ({p.block[0]}, {p.block[1]})"
    idx = f", blockIdx = ({p.block_idx[0]}, {p.block_idx[1]})" if p.block_idx != (0, 0) else ""
    return (f"Take warp {p.warp} of a block with {block}{idx} (threads are numbered with "
            "threadIdx.x fastest; a warp is 32 consecutive threads), every lane active.")  # fmt: skip


def make_bank(family: str, rng: random.Random) -> Question | None:
    p = _shared(rng)
    ways = memory.bank_ways(_addresses(p))
    body = (
        f"In a CUDA kernel:\n\n```c++\n{p.decls}\n// ...\n{p.stmt}\n```\n\n{_where(p)} Shared memory "
        "has 32 banks of 4 bytes (successive 4-byte words in successive banks; lanes reading the "
        "same word get it in one pass). Into how many conflict-free passes is this warp's read "
        "split (the n of an n-way bank conflict; 1 when there is no conflict)?"
    )
    return Question(
        task_id="", kind="bank", question=body, answer_format="integer",
        format_text="an integer from 1 to 32.", expected=ways, chance=1 / 32, family=None,
        language="cuda_cpp", verified=True,
        verification="the bank model (memory.bank_ways) on the lanes' addresses; hand-checked cases in the tests",
        metadata={"stmt": p.stmt, "decls": p.decls, "block": list(p.block), "warp": p.warp},
    )  # fmt: skip


def make_coalesce(family: str, rng: random.Random) -> Question | None:
    p = _global(rng)
    count = memory.sectors(_addresses(p), p.elem)
    body = (
        f"In a CUDA kernel:\n\n```c++\n{p.decls}\n// ...\n{p.stmt}\n```\n\n{_where(p)} Allocations "
        "start on a 256-byte boundary. How many distinct 32-byte sectors of global memory does "
        "this warp's load touch?"
    )
    return Question(
        task_id="", kind="coalesce", question=body, answer_format="integer",
        format_text="an integer.", expected=count, chance=1 / 64, family=None,
        language="cuda_cpp", verified=True,
        verification="the sector model (memory.sectors) on the lanes' addresses; hand-checked cases in the tests",
        metadata={"stmt": p.stmt, "decls": p.decls, "block": list(p.block), "warp": p.warp,
                  "block_idx": list(p.block_idx), "elem_bytes": p.elem},
    )  # fmt: skip


__all__ = ["Pattern", "make_bank", "make_coalesce"]
