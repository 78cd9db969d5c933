"""Sources of the rownorm family besides the reference: the interface and the naive baseline (a
thread per row, statistics in double)."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Params
from cudaenv.families.rownorm_ops import FN, extras

_extras = extras


def signature(p: Params, ct: cpp.CType) -> str:
    extra = "".join(f"const {ct.dev}* {e}, " for e in _extras(p))
    return f"void {FN[p['kind']]}(const {ct.dev}* x, {extra}{ct.dev}* y, int rows, int cols)"


def baseline(p: Params, ct: cpp.CType) -> str:
    """One thread per row, serial loops, statistics in double."""
    kind, s = p["kind"], f"{p['scale']!r}"
    aff = "".join(
        {"gamma": " v = v * LD(gamma[j]);", "beta": " v = v + LD(beta[j]);"}[e] for e in _extras(p)
    )
    if kind in ("softmax", "logsoftmax"):
        fin = (
            "yr[j] = ST(exp(S * (LD(xr[j]) - m)) / sum);"
            if kind == "softmax"
            else "yr[j] = ST(S * (LD(xr[j]) - m) - log(sum));"
        )
        body = f"""    const double S = {s};
    double m = -INFINITY;
    for (int j = 0; j < cols; ++j) m = fmax(m, LD(xr[j]));
    double sum = 0.0;
    for (int j = 0; j < cols; ++j) sum += exp(S * (LD(xr[j]) - m));
    for (int j = 0; j < cols; ++j) {fin}"""
    elif kind == "layernorm":
        body = f"""    double mu = 0.0;
    for (int j = 0; j < cols; ++j) mu += LD(xr[j]);
    mu /= cols;
    double var = 0.0;
    for (int j = 0; j < cols; ++j) var += (LD(xr[j]) - mu) * (LD(xr[j]) - mu);
    const double rstd = 1.0 / sqrt(var / cols + {p["eps"]!r});
    for (int j = 0; j < cols; ++j) {{ double v = (LD(xr[j]) - mu) * rstd;{aff} yr[j] = ST(v); }}"""
    else:
        body = f"""    double sq = 0.0;
    for (int j = 0; j < cols; ++j) sq += LD(xr[j]) * LD(xr[j]);
    const double rinv = 1.0 / sqrt(sq / cols + {p["eps"]!r});
    for (int j = 0; j < cols; ++j) {{ double v = LD(xr[j]) * rinv;{aff} yr[j] = ST(v); }}"""
    extra = "".join(f"const T* {e}, " for e in _extras(p))
    args = "".join(f"{e}, " for e in _extras(p))
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{FN[kind]}.h"

// Naive baseline: one thread per row, serial loops, statistics in double.
typedef {ct.dev} T;
#define LD(v) ((double){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}

__global__ void naive(const T* x, {extra}T* y, int rows, int cols) {{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const T* xr = x + (size_t)r * cols;
    T* yr = y + (size_t)r * cols;
{body}
}}

{signature(p, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    naive<<<(rows + 127) / 128, 128>>>(x, {args}y, rows, cols);
}}
"""
