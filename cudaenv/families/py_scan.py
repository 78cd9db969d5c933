"""py-scan (numba-cuda): the scan family's inclusive/exclusive add/max/min scans, plain or
segmented, of one array or every row, float32, float64 or int32. The reference scans tiles of
128 elements in shared memory (Hillis-Steele on (head, value) pairs) with a carry: every row by
one block, or one array by tile totals, their prefix, then every tile."""

from __future__ import annotations

from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import py_parts
from cudaenv.families.py_scan_src import DTYPES, _consts, baseline
from cudaenv.families.runners import Arg, Io
from cudaenv.families.scan_ops import (
    CALLS,
    PERF,
    SIZES,
    SPACE,
    difficulty,
    fn,
    py_cases,
    tolerance_text,
    what,
    work,
)

FORBIDDEN = ["numpy.cumsum", "numpy.add.accumulate", "numpy.maximum.accumulate",
             "numpy.minimum.accumulate", "numpy.cumprod", "numpy.fmax.accumulate"]  # fmt: skip


def reference(p: Params, bug: str | None = None) -> str:
    ident, op, acc = _consts(p, bug)
    rows = p["layout"] == "rows"
    at = "r, i" if rows else "i"
    seg = p["segmented"] and bug != "boundary"
    head = f"1 if (i == 0 or fl[{at}] != 0) else 0" if seg else "1 if i == 0 else 0"
    kind = (
        p["kind"]
        if bug != "operator"
        else ("exclusive" if p["kind"] == "inclusive" else "inclusive")
    )
    res = "incl" if kind == "inclusive" else "excl"
    end = "n - n % 32" if bug == "tail" else "n"
    fl_arg = "fl, " if p["segmented"] else ""
    tile = f"""
@cuda.jit(device=True)
def op(a, b):
    return {op}


@cuda.jit(device=True)
def tile_scan(x, {fl_arg}out, r, t0, n, cv, cf, sv, sf, write):
    # Scans elements [t0, t0 + THREADS) after the carry (cf, cv); returns the carry after them.
    tid = cuda.threadIdx.x
    i = t0 + tid
    h = 0
    v = ID
    if i < {end}:
        v = x[{at}]
        h = {head}
    sv[tid] = v
    sf[tid] = h
    cuda.syncthreads()
    off = 1
    while off < THREADS:
        pv = ID
        pf = 0
        if tid >= off:
            pv = sv[tid - off]
            pf = sf[tid - off]
        cuda.syncthreads()
        if tid >= off:
            if sf[tid] == 0:
                sv[tid] = op(pv, sv[tid])
            sf[tid] = sf[tid] | pf
        cuda.syncthreads()
        off *= 2
    incl = sv[tid] if sf[tid] else op(cv, sv[tid])
    excl = cv
    if tid > 0:
        excl = sv[tid - 1] if sf[tid - 1] else op(cv, sv[tid - 1])
    if h:
        excl = ID
    if write and i < {end}:
        out[{at}] = {res}
    lf = sf[THREADS - 1]
    lv = sv[THREADS - 1]
    cuda.syncthreads()
    if lf:
        return lv, 1
    return op(cv, lv), cf
"""
    restart = bug == "tile-restart"  # every tile starts a new scan
    carry = "ID, 0" if restart else "cv, cf"
    pre = "ID, 0" if restart else "tv[t], tf[t]"
    if rows:
        kernels = f"""
@cuda.jit
def _rows(x, {fl_arg}out):
    sv = cuda.shared.array(THREADS, dtype={acc})
    sf = cuda.shared.array(THREADS, dtype=int32)
    rows = x.shape[0]
    n = x.shape[1]
    r = cuda.blockIdx.x
    while r < rows:
        cv = ID
        cf = 0
        t0 = 0
        while t0 < n:
            cv, cf = tile_scan(x, {fl_arg}out, r, t0, n, {carry}, sv, sf, True)
            t0 += THREADS
        r += cuda.gridDim.x


def _launch(x, {fl_arg}out):
    _rows[min(x.shape[0], 65535), THREADS](x, {fl_arg}out)
"""
    else:
        kernels = f"""
@cuda.jit
def _tile_totals(x, {fl_arg}tv, tf):
    sv = cuda.shared.array(THREADS, dtype={acc})
    sf = cuda.shared.array(THREADS, dtype=int32)
    n = x.shape[0]
    t = cuda.blockIdx.x
    while t < tv.shape[0]:
        v, f = tile_scan(x, {fl_arg}x, 0, t * THREADS, n, ID, 0, sv, sf, False)
        if cuda.threadIdx.x == 0:
            tv[t] = v
            tf[t] = f
        t += cuda.gridDim.x


@cuda.jit
def _prefix(tv, tf):
    # one thread: the carry before every tile, in place
    cv = ID
    cf = 0
    for t in range(tv.shape[0]):
        v = tv[t]
        f = tf[t]
        tv[t] = cv
        tf[t] = cf
        if f:
            cv = v
            cf = 1
        else:
            cv = op(cv, v)


@cuda.jit
def _scan_tiles(x, {fl_arg}out, tv, tf):
    sv = cuda.shared.array(THREADS, dtype={acc})
    sf = cuda.shared.array(THREADS, dtype=int32)
    n = x.shape[0]
    t = cuda.blockIdx.x
    while t < tv.shape[0]:
        tile_scan(x, {fl_arg}out, 0, t * THREADS, n, {pre}, sv, sf, True)
        t += cuda.gridDim.x


def _launch(x, {fl_arg}out):
    tiles = (x.shape[0] + THREADS - 1) // THREADS
    tv = cuda.device_array(tiles, dtype=np.{DTYPES[p["dtype"]]})
    tf = cuda.device_array(tiles, dtype=np.int32)
    blocks = min(tiles, 4096)
    _tile_totals[blocks, THREADS](x, {fl_arg}tv, tf)
    _prefix[1, 1](tv, tf)
    _scan_tiles[blocks, THREADS](x, {fl_arg}out, tv, tf)
"""
    devs = "    dfl = cuda.to_device(fl) if host else fl\n" if p["segmented"] else ""
    dfl = "dfl, " if p["segmented"] else ""
    return f'''"""{p["kind"]} {p["op"]} scan{" within segments" if p["segmented"] else ""}: shared-memory tiles with a carry."""

import math

import numpy as np
from numba import cuda, float32, float64, int16, int32

THREADS = 128
ID = {ident}
{tile}{kernels}

def {fn(p)}(x, {fl_arg}out):
    if x.size == 0:
        return
    host = isinstance(out, np.ndarray)
    dx = cuda.to_device(x) if host else x
{devs}    dout = cuda.to_device(out) if host else out
    _launch(dx, {dfl}dout)
    if host:
        dout.copy_to_host(out)
'''


def io(p: Params) -> Io:
    args = [Arg("x", p["dtype"])] + ([Arg("flags", "i32")] if p["segmented"] else [])
    return Io(fn(p), (*args, Arg("out", p["dtype"], "out")), SIZES)


def _prompt(p: Params) -> str:
    integer = p["dtype"] == "i32"
    acc = {"f32": "float", "f64": "double", "i32": "int"}[p["dtype"]]
    dt = DTYPES[p["dtype"]]
    fl = "fl, " if p["segmented"] else ""
    shape = (
        "2-D arrays of shape `(rows, cols)`, every row scanned on its own"
        if p["layout"] == "rows"
        else "1-D arrays of length `n`"
    )
    flags = (
        " `fl` is an `int32` array of the same shape (the segment heads: `flags` below)."
        if p["segmented"]
        else ""
    )
    pr, pc = PERF[p["layout"]]
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {fn(p)}(x, {fl}out) -> None
```

- `x` and `out` are C-contiguous `{dt}` {shape}.{flags} Compute {what(p, integer)}
  Do not modify the inputs.
- Sizes: 0 included (nothing to do), lengths that are not multiples of any block size, long
  arrays (small on numba-cuda's simulator); the benchmark times {CALLS} calls on
  {f"{pr} x {pc}" if p["layout"] == "rows" else pc}-element device arrays.

{tolerance_text(p, acc, integer)}

{py.closing(fn(p))}
"""


class PyScan(Family):
    name = "py-scan"
    slug = "pyscan"
    problem_type = "cuda_python"
    group = "cuda-python"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        return py_parts(self.name, p, task_id, io=io(p), module="scan", cases=py_cases(p),
                        prompt=_prompt(p), reference=reference(p), baseline=baseline(p),
                        difficulty=difficulty(p),  # type: ignore[arg-type]
                        tags=["numba", "scan", "prefix-sum", p["op"], p["dtype"]]
                        + (["segmented"] if p["segmented"] else []),
                        work=work(p), forbidden=FORBIDDEN)  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        def m(name: str, kind: str, why: str, bug: str) -> Mutant:
            return Mutant(name, kind, why, {"solution.py": reference(p, bug)})  # type: ignore[arg-type]

        other = "exclusive" if p["kind"] == "inclusive" else "inclusive"
        out = [
            m("tail", "tail", "skips the last (length mod 32) elements", "tail"),
            m("operator", "operator", f"computes the {other} scan", "operator"),
        ]
        if p["segmented"]:
            out.append(m("boundary", "boundary", "ignores the segment heads", "boundary"))
        if p["op"] == "add" and p["dtype"] != "i32":
            out.append(m("narrow", "accumulation", "tile partials in a narrower type", "narrow"))
        elif not p["segmented"]:  # (the simulator's int sums are too small to overflow 16 bits)
            out.append(m("tile-restart", "boundary", "every 128-element tile starts a new scan",
                         "tile-restart"))  # fmt: skip
        return out
