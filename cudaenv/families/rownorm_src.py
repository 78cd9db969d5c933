"""Sources of the rownorm family besides the reference: the naive baseline (a thread per row,
statistics in double), the host reference (test/host_ref.h) and the harness's input kinds."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Params
from cudaenv.families.rownorm_ops import FN, RTOL


def _extras(p: Params) -> list[str]:
    return {"none": [], "gamma": ["gamma"], "gamma_beta": ["gamma", "beta"]}[p["affine"]]


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


def host_ref(p: Params, ct: cpp.CType) -> str:
    acc = "double" if ct.key == "f64" else "float"
    r, a = RTOL[p["kind"]][acc], 1e-300 if acc == "double" else 1e-10
    g = "G = " + ct.host_value("gamma[j]") + ";" if "gamma" in _extras(p) else ""
    b = "B = " + ct.host_value("beta[j]") + ";" if "beta" in _extras(p) else ""
    kind, s = p["kind"], p["scale"]
    stats = {
        "softmax": f"double m = -INFINITY, sum = 0.0;\n        for (int j = 0; j < cols; ++j) m = fmax(m, v[j]);\n        for (int j = 0; j < cols; ++j) sum += exp({s!r} * (v[j] - m));",
        "layernorm": f"double mu = 0.0, var = 0.0;\n        for (int j = 0; j < cols; ++j) mu += v[j];\n        mu /= cols;\n        for (int j = 0; j < cols; ++j) var += (v[j] - mu) * (v[j] - mu);\n        const double rstd = 1.0 / sqrt(var / cols + {p['eps']!r});",
        "rmsnorm": f"double sq = 0.0;\n        for (int j = 0; j < cols; ++j) sq += v[j] * v[j];\n        const double rinv = 1.0 / sqrt(sq / cols + {p['eps']!r});",
    }[kind if kind != "logsoftmax" else "softmax"]
    elem = {
        "softmax": f"const double e = exp({s!r} * (v[j] - m)) / sum;\n            w = e;\n            t = R * e + A;",
        "logsoftmax": f"const double av = {s!r} * (v[j] - m), L = log(sum);\n            w = av - L;\n            t = R * (1.0 + fabs(av) + fabs(L)) + A;",
        "layernorm": "const double xh = (v[j] - mu) * rstd;\n            w = xh * G + B;\n            t = R * (1.0 + fabs(xh)) * fabs(G) + R * fabs(B) + A;",
        "rmsnorm": "const double xh = v[j] * rinv;\n            w = xh * G;\n            t = R * (fabs(xh) + 1e-3) * fabs(G) + A;",
    }[kind]
    half = "\n            t += fabs(w) * 0x1p-11 + 0x1p-25;" if ct.key == "f16" else ""
    extra = "".join(f"const {ct.host}* {e}, " for e in _extras(p))
    code = f"""
// {p["kind"]} of every row: want the exact value (double), tol the tolerance of the statement.
static void host_rownorm(const {ct.host}* x, {extra}int rows, int cols, double* want, double* tol) {{
    const double R = {r!r}, A = {a!r};
    std::vector<double> v(cols > 0 ? cols : 1);
    for (int r = 0; r < rows; ++r) {{
        for (int j = 0; j < cols; ++j) v[j] = {ct.host_value("x[(size_t)r * cols + j]")};
        {stats}
        for (int j = 0; j < cols; ++j) {{
            double G = 1.0, B = 0.0, w, t;
            {g} {b}
            (void)G; (void)B;
            {elem}{half}
            want[(size_t)r * cols + j] = w;
            tol[(size_t)r * cols + j] = t;
        }}
    }}
}}
"""
    return cpp.host_ref_header(
        f"row-wise {kind}", "#include <vector>\n" + code, half=ct.key == "f16"
    )
