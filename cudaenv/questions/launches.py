"""What each family's reference launches for given sizes, in closed form: grid and block of
every kernel launch, the static shared memory of each kernel, and (for one-element-per-thread
kernels without grid striding) how many launched threads do no work.

Read from the reference sources' host code; checked against what the code really launches
(the numba-cuda simulator's launches for the Python renderings, the C++ host code run against
a recording CUDA runtime stub) and against ``ptxas``'s shared-memory counts, in the tests and
``bench/questions_check.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Params = dict[str, Any]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int | None  # static shared memory per block (None: not modelled)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def threads(self) -> int:
        return self.blocks * math.prod(self.block)


@dataclass(frozen=True)
class Plan:
    """Every launch of one call, and the elements the one-element-per-thread kernel covers
    (None when threads loop over several elements or the mapping is not one-to-one)."""

    launches: list[Launch]
    work: int | None = None

    @property
    def blocks(self) -> int:
        return sum(lau.blocks for lau in self.launches)

    @property
    def threads(self) -> int:
        return sum(lau.threads for lau in self.launches)

    @property
    def idle(self) -> int | None:
        if self.work is None or len(self.launches) != 1:
            return None
        return self.launches[0].threads - self.work


def _l(kernel: str, grid: Any, block: Any, shared: int | None) -> Launch:
    g = tuple(grid) if isinstance(grid, tuple) else (grid,)
    b = tuple(block) if isinstance(block, tuple) else (block,)
    return Launch(kernel, (*g, 1, 1)[:3], (*b, 1, 1)[:3], shared)  # type: ignore[arg-type]


SIZE = {"f32": 4, "f64": 8, "f16": 2, "i32": 4}
CSIZE = {"f32": 4, "f64": 8, "f16": 4, "i32": 4}  # float math for half data


def _elementwise(p: Params, s: dict[str, int]) -> Plan:
    rows, cols = s["rows"], s["cols"]
    if rows <= 0 or cols <= 0:
        return Plan([])
    gx, gy = min(cdiv(cols, 256), 1024), min(rows, 65535)
    exact = gx * 256 >= cols and gy >= rows
    return Plan([_l("ew_kernel", (gx, gy), 256, 0)], rows * cols if exact else None)


def _py_elementwise(p: Params, s: dict[str, int]) -> Plan:
    rows, cols = s["rows"], s["cols"]
    if rows == 0 or cols == 0:
        return Plan([])
    gx, gy = cdiv(cols, 32), min(cdiv(rows, 4), 65535)
    return Plan([_l("_kernel", (gx, gy), (32, 4), 0)], rows * cols if gy * 4 >= rows else None)


def _reduce(p: Params, s: dict[str, int]) -> Plan:
    acc = 8 if p["dtype"] == "f64" else 4
    if p["axis"] == "row":
        rows, cols = s["rows"], s["cols"]
        if rows <= 0 or cols <= 0:
            return Plan([])
        return Plan([_l("reduce_rows", min(cdiv(rows, 8), 8192), 256, 0)])
    batch = s.get("batch", 1)
    rows, cols = s["rows"], s["cols"]
    if batch <= 0 or rows <= 0 or cols <= 0:
        return Plan([])
    tiles, zs = cdiv(cols, 32), min(batch, 65535)
    want = cdiv(2048, tiles * zs)
    splits = max(1, min(min(want, cdiv(rows, 32)), 64))
    acc_struct = 2 * acc if p["op"] in ("argmax", "argmin") else acc  # {value, int index}
    launches = [_l("reduce_cols", (tiles, splits, zs), (32, 8), 8 * 33 * acc_struct)]
    if splits > 1:
        launches.append(_l("finish_cols", min(cdiv(batch * cols, 256), 4096), 256, 0))
    return Plan(launches)


def _py_reduce(p: Params, s: dict[str, int]) -> Plan:
    acc = SIZE[p["dtype"]]
    if p["axis"] == "row":
        rows = s["rows"]
        if rows == 0:
            return Plan([])
        return Plan([_l("_rows", min(rows, 4096), 64, 64 * (acc + 4))])
    batch, cols = s.get("batch", 1), s["cols"]
    if batch * cols == 0:
        return Plan([])
    return Plan([_l("_cols", (cdiv(cols, 32), min(batch, 65535)), (32, 8), 8 * 32 * (acc + 4))])


def _scan(p: Params, s: dict[str, int]) -> Plan:
    pair = 16 if p["dtype"] == "f64" else 8  # struct {int f; A v;}
    shared = 8 * pair
    if p["layout"] == "rows":
        rows, cols = s["rows"], s["cols"]
        if rows <= 0 or cols <= 0:
            return Plan([])
        return Plan([_l("scan_rows", min(rows, 65535), 256, shared)])
    n = s["n"]
    if n <= 0:
        return Plan([])
    blocks = min(cdiv(n, 1024), 4096)
    return Plan([_l("tile_sums", blocks, 256, shared), _l("prefix_sums", 1, 256, shared),
                 _l("scan_tiles", blocks, 256, shared)])  # fmt: skip


def _py_scan(p: Params, s: dict[str, int]) -> Plan:
    shared = 128 * (SIZE[p["dtype"]] + 4)
    if p["layout"] == "rows":
        rows, cols = s["rows"], s["cols"]
        if rows * cols == 0:
            return Plan([])
        return Plan([_l("_rows", min(rows, 65535), 128, shared)])
    n = s["n"]
    if n == 0:
        return Plan([])
    blocks = min(cdiv(n, 128), 4096)
    return Plan([_l("_tile_totals", blocks, 128, shared), _l("_prefix", 1, 1, 0),
                 _l("_scan_tiles", blocks, 128, shared)])  # fmt: skip


def _stencil(p: Params, s: dict[str, int]) -> Plan:
    c, r = CSIZE[p["dtype"]], p["radius"]
    if p["dim"] == 1:
        n = s["n"]
        if n <= 0:
            return Plan([])
        blocks = min(cdiv(n, 256), 4096)
        return Plan(
            [_l("stencil_kernel", blocks, 256, (256 + 2 * r) * c)], n if blocks * 256 >= n else None
        )
    rows, cols = s["rows"], s["cols"]
    if rows <= 0 or cols <= 0:
        return Plan([])
    gx, gy = min(cdiv(cols, 32), 1024), min(cdiv(rows, 8), 65535)
    work = rows * cols if gx * 32 >= cols and gy * 8 >= rows else None
    return Plan([_l("stencil_kernel", (gx, gy), (32, 8), (8 + 2 * r) * (32 + 2 * r + 1) * c)], work)


def _py_stencil(p: Params, s: dict[str, int]) -> Plan:
    c, r = SIZE[p["dtype"]], p["radius"]
    if p["dim"] == 1:
        n = s["n"]
        if n == 0:
            return Plan([])
        blocks = min(cdiv(n, 128), 4096)
        return Plan(
            [_l("_stencil", blocks, 128, (128 + 2 * r) * c)], n if blocks * 128 >= n else None
        )
    rows, cols = s["rows"], s["cols"]
    if rows == 0 or cols == 0:
        return Plan([])
    gx, gy = min(cdiv(cols, 32), 1024), min(cdiv(rows, 4), 65535)
    work = rows * cols if gx * 32 >= cols and gy * 4 >= rows else None
    return Plan([_l("_stencil", (gx, gy), (32, 4), (4 + 2 * r) * (32 + 2 * r) * c)], work)


def _permute(p: Params, s: dict[str, int], *, py: bool) -> Plan:
    perm = p["perm"]
    n = len(perm)
    d = [s[f"d{i}"] for i in range(n)]
    if any(v <= 0 for v in d):
        return Plan([])
    if perm[-1] == n - 1:  # rows copied as they are
        rows = math.prod(d[q] for q in perm[:-1])
        width = 128 if py else 256
        name = "_copy_rows" if py else "copy_rows"
        return Plan([_l(name, (min(cdiv(d[-1], width), 64), min(rows, 65535)), width, 0)])
    a = perm[-1]
    nz = math.prod(d[q] for q in range(n) if q not in (a, n - 1))
    grid = (cdiv(d[-1], 32), cdiv(d[a], 32), min(nz, 65535))
    return Plan(
        [
            _l(
                "_tile" if py else "tile_kernel",
                grid,
                (32, 4) if py else (32, 8),
                32 * 33 * SIZE[p["dtype"]],
            )
        ]
    )


def _rownorm(p: Params, s: dict[str, int]) -> Plan:
    rows, cols = s["rows"], s["cols"]
    if rows <= 0 or cols <= 0:
        return Plan([])
    if cols <= 1024:
        return Plan([_l("rows_kernel<false>", min(cdiv(rows, 8), 1 << 20), 256, None)])
    return Plan([_l("rows_kernel<true>", min(rows, 1 << 20), 256, None)])


def _py_rownorm(p: Params, s: dict[str, int]) -> Plan:
    rows = s["rows"]
    if rows == 0:
        return Plan([])
    return Plan([_l("_rows", min(rows, 65535), 64, 64 * SIZE[p["dtype"]])])


def _matmul(p: Params, s: dict[str, int]) -> Plan:
    m, n = s["M"], s["N"]
    if m <= 0 or n <= 0:
        return Plan([])
    acc = 8 if p["dtype"] == "f64" else 4
    return Plan([_l("gemm_kernel", (cdiv(n, 64), cdiv(m, 64)), (16, 16), 2 * 16 * 65 * acc)])


def _indexing(p: Params, s: dict[str, int]) -> Plan:
    n = s["n"]
    if n <= 0:
        return Plan([])
    if p["op"] == "histogram":
        return Plan([_l("hist_kernel", min(cdiv(n, 256), 1024), 256, 4 * p["width"])])
    total = n * p["width"]
    blocks = min(cdiv(total, 256), 65536)
    name = "gather_kernel" if p["op"] == "gather" else "scatter_kernel"
    return Plan([_l(name, blocks, 256, 0)], total if blocks * 256 >= total else None)


PLANS: dict[str, Callable[[Params, dict[str, int]], Plan]] = {
    "elementwise": _elementwise,
    "py-elementwise": _py_elementwise,
    "reduce-axis": _reduce,
    "py-reduce-axis": _py_reduce,
    "scan": _scan,
    "py-scan": _py_scan,
    "stencil": _stencil,
    "py-stencil": _py_stencil,
    "permute": lambda p, s: _permute(p, s, py=False),
    "py-permute": lambda p, s: _permute(p, s, py=True),
    "rownorm": _rownorm,
    "py-rownorm": _py_rownorm,
    "matmul": _matmul,
    "indexing": _indexing,
}


def plan(family: str, params: Params, sizes: dict[str, int]) -> Plan:
    """The launches of ``family``'s reference for ``sizes`` (the interface's size names:
    ``rows``, ``cols``, ``n``, ``batch``, ``d0``.., ``M``, ``N``, ``K``)."""
    return PLANS[family](params, sizes)


__all__ = ["PLANS", "Launch", "Plan", "cdiv", "plan"]
