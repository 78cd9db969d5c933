"""matmul reference semantics (NumPy only; copied verbatim into each problem's
``check/reference.py``).

Parameters: ``trans_a`` (``A`` stored ``(K, M)``, else ``(M, K)``), ``trans_b`` (``B`` stored
``(N, K)``, else ``(K, N)``), ``epilogue`` (none bias bias_relu bias_gelu residual
scale_residual; ``bias`` has ``N`` elements, ``D`` is ``(M, N)``), ``dtype`` (f32 f64 f16:
half data, float accumulation), ``shape`` (the benchmark's). ``C`` is ``(M, N)``:
``|C - exact| <= 2 (2 K u sum_k |a_mk b_kn| + e)`` per element, ``e`` the epilogue's rounding,
half outputs adding the final rounding to half. :func:`expected_at` evaluates a sample of the
entries (the benchmark's outputs are checked on a sample the checker draws after the run).
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
GELU_C = 0.7978845608028654  # sqrt(2 / pi)
CHUNK = 256  # sampled entries per vectorised dot product


def extra(p: dict) -> str | None:
    e = p["epilogue"]
    return "bias" if e.startswith("bias") else (None if e == "none" else "D")


def inputs(p: dict, sizes: dict) -> dict:
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    dt = STORE[p["dtype"]]
    out = {"A": ((k, m) if p["trans_a"] else (m, k), dt),
           "B": ((n, k) if p["trans_b"] else (k, n), dt)}  # fmt: skip
    ex = extra(p)
    if ex:
        out[ex] = ((n,) if ex == "bias" else (m, n), dt)
    return out


def outputs(p: dict, sizes: dict) -> dict:
    return {"C": ((sizes["M"], sizes["N"]), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    return {
        name: rng.uniform(-1.0, 1.0, shape).astype(dtype)
        for name, (shape, dtype) in inputs(p, sizes).items()
    }


def _operands(p: dict, arrays: dict) -> tuple[np.ndarray, np.ndarray]:
    a, b = arrays["A"].astype(np.float64), arrays["B"].astype(np.float64)
    return (a.T if p["trans_a"] else a), (b.T if p["trans_b"] else b)


def _finish(p: dict, k: int, s, mag, bias, d) -> tuple[np.ndarray, np.ndarray]:
    """(want, tol) from the dot products ``s``, their magnitudes and the epilogue's operand."""
    u = 2.0**-53 if p["dtype"] == "f64" else 2.0**-24
    e = 2.0 * k * u * mag
    epi = p["epilogue"]
    if epi == "none":
        w, t = s, e
    elif epi in ("bias", "bias_relu"):
        z = s + bias
        w = z if epi == "bias" else np.maximum(z, 0.0)
        t = e + u * np.abs(z if epi == "bias_relu" else w)
    elif epi == "bias_gelu":
        z = s + bias
        w = 0.5 * z * (1.0 + np.tanh(GELU_C * (z + 0.044715 * z * z * z)))
        t = 1.2 * (e + u * np.abs(z)) + 8.0 * u * (np.abs(w) + np.abs(z))
    elif epi == "residual":
        w = s + d
        t = e + u * np.abs(w)
    else:
        w = 0.5 * s - 1.5 * d
        t = 0.5 * e + 2.0 * u * (np.abs(w) + 1.5 * np.abs(d))
    tol = 2.0 * t
    if p["dtype"] == "f16":  # the final rounding to half
        tol = tol + np.abs(w) * 2.0**-11 + 2.0**-25
    return w, tol + 1e-300


def _epilogue_operand(arrays: dict, name: str | None, rows, cols):
    if name == "bias":
        return arrays["bias"].astype(np.float64)[cols], None
    if name == "D":
        return None, arrays["D"].astype(np.float64)[rows, cols]
    return None, None


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    a, b = _operands(p, arrays)
    m, n = sizes["M"], sizes["N"]
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    bias, d = _epilogue_operand(arrays, extra(p), rows, cols)
    return {"C": _finish(p, sizes["K"], a @ b, np.abs(a) @ np.abs(b), bias, d)}


def expected_at(p: dict, sizes: dict, arrays: dict, name: str, flat: np.ndarray) -> tuple:
    """(want, tol) of the entries of ``C`` at the flat indices ``flat``."""
    a, b = _operands(p, arrays)
    rows, cols = flat // sizes["N"], flat % sizes["N"]
    s, mag = np.empty(flat.size), np.empty(flat.size)
    for lo in range(0, flat.size, CHUNK):
        ar, bc = a[rows[lo : lo + CHUNK]], b[:, cols[lo : lo + CHUNK]].T
        s[lo : lo + CHUNK] = np.einsum("ik,ik->i", ar, bc)
        mag[lo : lo + CHUNK] = np.einsum("ik,ik->i", np.abs(ar), np.abs(bc))
    bias, d = _epilogue_operand(arrays, extra(p), rows, cols)
    return _finish(p, sizes["K"], s, mag, bias, d)
