"""rownorm reference semantics (NumPy only; shared by the C++ and Python renderings' checkers and
copied verbatim into each problem's ``check/reference.py``).

Parameters: ``kind`` (softmax logsoftmax layernorm rmsnorm), ``dtype`` (f32 f64 f16: half
data, float statistics), ``scale`` (softmax of ``scale * x``), ``eps``, ``affine`` (none gamma
gamma_beta), ``regime`` (the benchmark's row length). ``x`` and ``y`` are ``(rows, cols)``;
``gamma`` and ``beta`` have ``cols`` elements. Tolerances per element, with ``R`` by kind and
accumulation type and ``A`` a floor: softmax ``R * exact``; log-softmax ``R * (1 + |a| + |L|)``
(``a`` the scaled, shifted input, ``L`` the log of the row sum); layernorm
``R * (1 + |xhat|) * |gamma| + R * |beta|``; RMSNorm ``R * (|xhat| + 1e-3) * |gamma|``; half
outputs add the final rounding to half.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
RTOL = {
    "softmax": {"float": 1e-4, "double": 1e-12},
    "logsoftmax": {"float": 5e-5, "double": 1e-12},
    "layernorm": {"float": 1e-3, "double": 1e-10},
    "rmsnorm": {"float": 1e-4, "double": 1e-12},
}
#: input kinds: uniform in [-5, 5]; rows shifted by multiples of 1000 (exp overflows without
#: the row maximum, even in double); rows around 4 (the mean matters); constant rows
KINDS = ("uniform", "shifted", "offset", "constant")


def extras(p: dict) -> list[str]:
    return {"none": [], "gamma": ["gamma"], "gamma_beta": ["gamma", "beta"]}[p["affine"]]


def inputs(p: dict, sizes: dict) -> dict:
    r, c = sizes["rows"], sizes["cols"]
    dt = STORE[p["dtype"]]
    return {"x": ((r, c), dt), **{e: ((c,), dt) for e in extras(p)}}


def outputs(p: dict, sizes: dict) -> dict:
    return {"y": ((sizes["rows"], sizes["cols"]), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    rows, cols = sizes["rows"], sizes["cols"]
    x = rng.uniform(-5.0, 5.0, (rows, cols))
    if kind == "shifted":
        x += 1000.0 * ((np.arange(rows) % 5) - 2)[:, None]
    elif kind == "offset":
        x = 4.0 + x / 5.0
    elif kind == "constant":
        x[:] = 1.5
    dt = STORE[p["dtype"]]
    out = {"x": x.astype(dt)}
    for e in extras(p):
        lo = -2.0 if e == "gamma" else -1.0
        out[e] = rng.uniform(lo, -lo, cols).astype(dt)
    return out


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    acc = "double" if p["dtype"] == "f64" else "float"
    r, a = RTOL[p["kind"]][acc], (1e-300 if acc == "double" else 1e-10)
    v = arrays["x"].astype(np.float64)
    g = arrays["gamma"].astype(np.float64) if "gamma" in arrays else 1.0
    b = arrays["beta"].astype(np.float64) if "beta" in arrays else 0.0
    kind, s = p["kind"], p["scale"]
    if v.size == 0:
        return {"y": (v, None)}
    if kind in ("softmax", "logsoftmax"):
        m = v.max(axis=1, keepdims=True)
        av = s * (v - m)
        total = np.exp(av).sum(axis=1, keepdims=True)
        if kind == "softmax":
            want = np.exp(av) / total
            tol = r * want + a
        else:
            lse = np.log(total)
            want = av - lse
            tol = r * (1.0 + np.abs(av) + np.abs(lse)) + a
    elif kind == "layernorm":
        mu = v.mean(axis=1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=1, keepdims=True)
        xh = (v - mu) / np.sqrt(var + p["eps"])
        want = xh * g + b
        tol = r * (1.0 + np.abs(xh)) * np.abs(g) + r * np.abs(b) + a
    else:
        xh = v / np.sqrt((v * v).mean(axis=1, keepdims=True) + p["eps"])
        want = xh * g
        tol = r * (np.abs(xh) + 1e-3) * np.abs(g) + a
    want = np.broadcast_to(want, v.shape)
    tol = np.broadcast_to(tol, v.shape)
    if p["dtype"] == "f16":  # the final rounding to half
        tol = tol + np.abs(want) * 2.0**-11 + 2.0**-25
    return {"y": (want, tol)}
