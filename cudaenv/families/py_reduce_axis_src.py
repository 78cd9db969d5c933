"""numba sources of the py-reduce-axis family: the reference (a block per row, or 32x8 column
tiles), the naive baseline (a thread per output) and the mutants, each the reference with one
bug."""

from __future__ import annotations

import textwrap

from cudaenv.families.base import Params
from cudaenv.families.reduce_ops import OPS

AXES = ("row", "col", "mid")
DTYPES = {"f32": ("float32", "float"), "f64": ("float64", "double")}
TAIL, NARROW, IDENTITY0, SIGNED, LAST_INDEX = "tail", "narrow", "identity0", "signed", "last-index"


def _op_code(op: str, bug: str | None) -> dict[str, str]:
    """Kernel lines: ``init``; ``combine`` (element ``v`` at index ``t``); ``join`` (another
    partial ``w``/``wi``); ``finish`` (an expression of ``acc``/``ai`` and the count ``n``)."""
    if op in ("sum", "mean", "norm2", "sumsq"):
        sq = op in ("norm2", "sumsq")
        fin = {"sum": "acc", "mean": "acc / n", "norm2": "math.sqrt(acc)", "sumsq": "acc"}[op]
        return {"init": "acc = 0.0\nai = 0", "combine": "acc += v * v" if sq else "acc += v",
                "join": "acc += w", "finish": fin}  # fmt: skip
    if op in ("max", "min", "absmax"):
        if bug == SIGNED:
            return {"init": "acc = 0.0\nai = 0",
                    "combine": "if abs(v) > abs(acc):\n    acc = v",
                    "join": "if abs(w) > abs(acc):\n    acc = w", "finish": "acc"}  # fmt: skip
        fn = "min" if op == "min" else "max"
        init = {"max": "-math.inf", "min": "math.inf", "absmax": "0.0"}[op]
        if bug == IDENTITY0:
            init = "0.0"
        val = "abs(v)" if op == "absmax" else "v"
        return {"init": f"acc = {init}\nai = 0", "combine": f"acc = {fn}(acc, {val})",
                "join": f"acc = {fn}(acc, w)", "finish": "acc"}  # fmt: skip
    cmp = ">" if op == "argmax" else "<"
    init = "-math.inf" if op == "argmax" else "math.inf"
    if bug == LAST_INDEX:
        return {"init": f"acc = {init}\nai = -1", "combine": f"if v {cmp}= acc:\n    acc = v\n    ai = t",
                "join": f"if w {cmp} acc or (w == acc and wi > ai):\n    acc = w\n    ai = wi",
                "finish": "ai"}  # fmt: skip
    return {"init": f"acc = {init}\nai = 2147483647", "combine": f"if v {cmp} acc:\n    acc = v\n    ai = t",
            "join": f"if w {cmp} acc or (w == acc and wi < ai):\n    acc = w\n    ai = wi",
            "finish": "ai"}  # fmt: skip


def _ind(code: str, n: int) -> str:
    return textwrap.indent(code, " " * n).lstrip(" ")


ROW = """
THREADS = 64


@cuda.jit
def _rows(x, out):
    # One block per row: the threads stride over the row, then a shared-memory tree.
    part = cuda.shared.array(THREADS, dtype=@ACC@)
    pidx = cuda.shared.array(THREADS, dtype=int32)
    tid = cuda.threadIdx.x
    rows = x.shape[0]
    n = x.shape[1]
    r = cuda.blockIdx.x
    while r < rows:
        @INIT8@
        t = tid
        while t < @END@:
            v = x[r, t]
            @COMBINE12@
            t += THREADS
        part[tid] = acc
        pidx[tid] = ai
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:
            if tid < step:
                acc = part[tid]
                ai = pidx[tid]
                w = part[tid + step]
                wi = pidx[tid + step]
                @JOIN16@
                part[tid] = acc
                pidx[tid] = ai
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            acc = part[0]
            ai = pidx[0]
            out[r] = @FINISH@
        cuda.syncthreads()
        r += cuda.gridDim.x


def @NAME@(x, out):
    if x.shape[0] == 0:
        return
    host = isinstance(out, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dout = cuda.to_device(out) if host else out
    _rows[min(x.shape[0], 4096), THREADS](dx, dout)
    if host:
        dout.copy_to_host(out)
"""

COL = """
TX = 32
TY = 8


@cuda.jit
def _cols(x, out):
    # Blocks of 32 adjacent columns x 8 row lanes (blockIdx.y walks the batches); the 8
    # partials of a column meet in shared memory.
    tile = cuda.shared.array((TY, TX), dtype=@ACC@)
    tidx = cuda.shared.array((TY, TX), dtype=int32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    @SHAPE@
    c = cuda.blockIdx.x * TX + tx
    b = cuda.blockIdx.y
    while b < batch:
        @INIT8@
        if c < cols:
            t = ty
            while t < @END@:
                v = @LOAD@
                @COMBINE16@
                t += TY
        tile[ty, tx] = acc
        tidx[ty, tx] = ai
        cuda.syncthreads()
        if ty == 0 and c < cols:
            for k in range(1, TY):
                w = tile[k, tx]
                wi = tidx[k, tx]
                @JOIN16@
            @STORE@ = @FINISH@
        cuda.syncthreads()
        b += cuda.gridDim.y


def @NAME@(x, out):
    @WRAPSHAPE@
    if batch * cols == 0:
        return
    host = isinstance(out, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dout = cuda.to_device(out) if host else out
    _cols[((cols + TX - 1) // TX, min(batch, 65535)), (TX, TY)](dx, dout)
    if host:
        dout.copy_to_host(out)
"""


def reference(params: Params, *, op: str | None = None, bug: str | None = None) -> str:
    """solution.py: the reference, or (``op``/``bug`` given) one of its mutants."""
    op = op or params["op"]
    code = _op_code(op, bug)
    axis = params["axis"]
    acc = DTYPES[params["dtype"]][0]
    if bug == NARROW:
        acc = "float32" if acc == "float64" else "int32"
    name = f"{axis}_{params['op']}"
    if axis == "row":
        src = ROW.replace("@END@", "n - n % 32" if bug == TAIL else "n")
    else:
        mid = axis == "mid"
        src = (
            COL.replace("@END@", "n - n % TY" if bug == TAIL else "n")
            .replace("@SHAPE@", "batch, n, cols = x.shape" if mid else "n, cols = x.shape\n    batch = 1")
            .replace("@LOAD@", "x[b, t, c]" if mid else "x[t, c]")
            .replace("@STORE@", "out[b, c]" if mid else "out[c]")
            .replace("@WRAPSHAPE@", "batch, _, cols = x.shape" if mid else "cols = x.shape[1]\n    batch = 1")
        )  # fmt: skip
    for key, width in (("INIT", 8), ("COMBINE", 12), ("COMBINE", 16), ("JOIN", 16)):
        src = src.replace(f"@{key}{width}@", _ind(code[key.lower()], width))
    src = src.replace("@FINISH@", code["finish"]).replace("@ACC@", acc).replace("@NAME@", name)
    note = f'"""{axis}-wise {params["op"]} of a {DTYPES[params["dtype"]][0]} array."""\n\n'
    head = "import math\n\nimport numpy as np\nfrom numba import cuda, float32, float64, int32\n"
    return note + head + src


def baseline(params: Params) -> str:
    """solution.py of the naive baseline: one thread per output, a serial loop in float64."""
    axis, op = params["axis"], OPS[params["op"]]
    at = {"row": "x[o, {t}]", "col": "x[{t}, o]", "mid": "x[o // cols, {t}, o % cols]"}[axis]
    get = f"abs({at})" if op.key == "absmax" else at
    if op.kind == "value":
        term = "v * v" if op.key == "norm2" else "v"
        fin = {"sum": "s", "mean": "s / n", "norm2": "math.sqrt(s)"}[op.key]
        body = (f"s = 0.0\n    for t in range(n):\n        v = {at.format(t='t')}\n"
                f"        s += {term}\n    res = {fin}")  # fmt: skip
    else:
        cmp = "<" if op.key in ("min", "argmin") else ">"
        res = "best" if op.kind == "arg" else "m"
        body = (f"m = {get.format(t='0')}\n    best = 0\n"
                f"    for t in range(1, n):\n        v = {get.format(t='t')}\n        if v {cmp} m:\n"
                f"            m = v\n            best = t\n    res = {res}")  # fmt: skip
    n_out = {"row": "x.shape[0]", "col": "x.shape[1]", "mid": "x.shape[0] * x.shape[2]"}[axis]
    n = "x.shape[1]" if axis == "row" else "x.shape[0]" if axis == "col" else "x.shape[1]"
    store = "out[o // cols, o % cols]" if axis == "mid" else "out[o]"
    cols = "x.shape[2]" if axis == "mid" else "0"  # (the simulator's shapes take no index -1)
    return f'''"""Naive baseline: one thread per output walks the reduced axis serially (in float64)."""

import math

import numpy as np
from numba import cuda


@cuda.jit
def _naive(x, out, n_out, n, cols):
    o = cuda.grid(1)
    if o >= n_out:
        return
    {body}
    {store} = res


def {axis}_{op.key}(x, out):
    n_out = {n_out}
    if n_out == 0:
        return
    host = isinstance(out, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dout = cuda.to_device(out) if host else out
    _naive[(n_out + 127) // 128, 128](dx, dout, n_out, {n}, {cols})
    if host:
        dout.copy_to_host(out)
'''
