"""Sources of the py-scan family besides the reference: the operator constants and the naive
baseline (one thread per row, serial)."""

from __future__ import annotations

from cudaenv.families.base import Params
from cudaenv.families.scan_ops import fn

DTYPES = {"f32": "float32", "f64": "float64", "i32": "int32"}


def _consts(p: Params, bug: str | None) -> tuple[str, str, str]:
    integer = p["dtype"] == "i32"
    ident = {"add": "0" if integer else "0.0", "max": "-2147483648" if integer else "-math.inf",
             "min": "2147483647" if integer else "math.inf"}[p["op"]]  # fmt: skip
    op = {"add": "a + b", "max": "max(a, b)", "min": "min(a, b)"}[p["op"]]
    acc = DTYPES[p["dtype"]]
    if bug == "narrow":
        acc = {"float64": "float32", "float32": "int32", "int32": "int16"}[acc]
    return ident, op, acc


def baseline(p: Params) -> str:
    ident, op, _ = _consts(p, None)
    rows = p["layout"] == "rows"
    at = "r, i" if rows else "i"
    fl_arg = "fl, " if p["segmented"] else ""
    head = f"i == 0 or fl[{at}] != 0" if p["segmented"] else "i == 0"
    res = "run" if p["kind"] == "inclusive" else "before"
    nrows = "x.shape[0]" if rows else "1"
    n = "x.shape[1]" if rows else "x.shape[0]"
    devs = "    dfl = cuda.to_device(fl) if host else fl\n" if p["segmented"] else ""
    dfl = "dfl, " if p["segmented"] else ""
    return f'''"""Naive baseline: one thread scans a whole row (or the whole array) serially."""

import math

import numpy as np
from numba import cuda


@cuda.jit
def _naive(x, {fl_arg}out):
    r = cuda.grid(1)
    if r >= {nrows}:
        return
    run = {ident}
    for i in range({n}):
        v = x[{at}]
        before = run
        if {head}:
            before = {ident}
            run = v
        else:
            a = run
            b = v
            run = {op}
        out[{at}] = {res}


def {fn(p)}(x, {fl_arg}out):
    if x.size == 0:
        return
    host = isinstance(out, np.ndarray)
    dx = cuda.to_device(x) if host else x
{devs}    dout = cuda.to_device(out) if host else out
    _naive[({nrows} + 127) // 128, 128](dx, {dfl}dout)
    if host:
        dout.copy_to_host(out)
'''
