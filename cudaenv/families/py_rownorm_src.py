"""Sources of the py-rownorm family besides the reference: the naive baseline (a thread per
row, statistics in float64)."""

from __future__ import annotations

from cudaenv.families.base import Params
from cudaenv.families.rownorm_ops import FN, extras

_extras = extras


def baseline(p: Params) -> str:
    kind, s = p["kind"], repr(p["scale"])
    aff = "".join({"gamma": " * gamma[j]", "beta": " + beta[j]"}[e] for e in _extras(p))
    if kind in ("softmax", "logsoftmax"):
        fin = (
            f"y[r, j] = math.exp({s} * (x[r, j] - m)) / t"
            if kind == "softmax"
            else f"y[r, j] = {s} * (x[r, j] - m) - math.log(t)"
        )
        body = f"""    m = -math.inf
    for j in range(n):
        m = max(m, x[r, j])
    t = 0.0
    for j in range(n):
        t += math.exp({s} * (x[r, j] - m))
    for j in range(n):
        {fin}"""
    elif kind == "layernorm":
        body = f"""    mu = 0.0
    for j in range(n):
        mu += x[r, j]
    mu /= n
    var = 0.0
    for j in range(n):
        var += (x[r, j] - mu) * (x[r, j] - mu)
    rstd = 1.0 / math.sqrt(var / n + {p["eps"]!r})
    for j in range(n):
        y[r, j] = (x[r, j] - mu) * rstd{aff}"""
    else:
        body = f"""    sq = 0.0
    for j in range(n):
        sq += x[r, j] * x[r, j]
    rinv = 1.0 / math.sqrt(sq / n + {p["eps"]!r})
    for j in range(n):
        y[r, j] = x[r, j] * rinv{aff}"""
    extra = "".join(f"{e}, " for e in _extras(p))
    devs = "".join(f"    d{e} = cuda.to_device({e}) if host else {e}\n" for e in _extras(p))
    dargs = "".join(f"d{e}, " for e in _extras(p))
    return f'''"""Naive baseline: one thread per row, serial loops (statistics in float64)."""

import math

import numpy as np
from numba import cuda


@cuda.jit
def _naive(x, {extra}y):
    r = cuda.grid(1)
    if r >= x.shape[0]:
        return
    n = x.shape[1]
{body}


def {FN[kind]}(x, {extra}y):
    rows = x.shape[0]
    if rows == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
{devs}    dy = cuda.to_device(y) if host else y
    _naive[(rows + 127) // 128, 128](dx, {dargs}dy)
    if host:
        dy.copy_to_host(y)
'''
