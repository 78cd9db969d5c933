"""stencil reference semantics (NumPy only; shared by the C++ and Python renderings' checkers and
copied verbatim into each problem's ``check/reference.py``).

Parameters: ``dim`` (1 or 2), ``radius``, ``shape`` (line; box or cross), ``weights`` (powers
of two, one per tap, taps in the order of :func:`taps`), ``boundary`` (clamp: the nearest edge;
zero: 0 outside; wrap: periodic; mirror: reflected without repeating the edge, period
``2n - 2``, every index reading element 0 when ``n == 1``), ``dtype`` (f32 f64 f16: half data,
float sums). ``x`` and ``y`` are ``(n,)`` or ``(rows, cols)``. Every product is exact, so only
the additions round: ``|y - exact| <= 2 T u sum |w x|`` for ``T`` taps (``u`` the compute
type's unit roundoff); half outputs add the final rounding to half.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def taps(p: dict) -> list[tuple[int, int, float]]:
    """(row offset, column offset, weight) of every tap; 1-D stencils have row offset 0."""
    r = p["radius"]
    if p["dim"] == 1:
        offs = [(0, k) for k in range(-r, r + 1)]
    elif p["shape"] == "box":
        offs = [(a, b) for a in range(-r, r + 1) for b in range(-r, r + 1)]
    else:
        offs = sorted(
            [(0, 0)]
            + [(a, 0) for a in range(-r, r + 1) if a]
            + [(0, b) for b in range(-r, r + 1) if b]
        )
    return [(a, b, w) for (a, b), w in zip(offs, p["weights"], strict=True)]


def index(j: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Where index ``j`` of an axis of length ``n`` reads (-1: the zero boundary's 0)."""
    if mode == "clamp":
        return np.clip(j, 0, n - 1)
    if mode == "zero":
        return np.where((j < 0) | (j >= n), -1, j)
    if mode == "wrap":
        return np.mod(j, n)
    if n == 1:
        return np.zeros_like(j)
    period = 2 * n - 2
    m = np.mod(j, period)
    return np.where(m < n, m, period - m)


def xy_shape(p: dict, sizes: dict) -> tuple[int, ...]:
    return (sizes["n"],) if p["dim"] == 1 else (sizes["rows"], sizes["cols"])


def inputs(p: dict, sizes: dict) -> dict:
    return {"x": (xy_shape(p, sizes), STORE[p["dtype"]])}


def outputs(p: dict, sizes: dict) -> dict:
    return {"y": (xy_shape(p, sizes), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    return {"x": rng.uniform(-2.0, 2.0, xy_shape(p, sizes)).astype(STORE[p["dtype"]])}


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    x = arrays["x"].astype(np.float64)
    x2 = x.reshape(1, -1) if p["dim"] == 1 else x
    rows, cols = x2.shape
    if x2.size == 0:
        return {"y": (x, None)}
    r_idx, c_idx = np.arange(rows)[:, None], np.arange(cols)[None, :]
    want, mag = np.zeros(x2.shape), np.zeros(x2.shape)
    mode = p["boundary"]
    for a, b, w in taps(p):
        rr, cc = index(r_idx + a, rows, mode), index(c_idx + b, cols, mode)
        v = np.where((rr < 0) | (cc < 0), 0.0, x2[np.maximum(rr, 0), np.maximum(cc, 0)])
        want += w * v
        mag += abs(w) * np.abs(v)
    u = 2.0**-53 if p["dtype"] == "f64" else 2.0**-24
    tol = 2 * len(taps(p)) * u * mag
    if p["dtype"] == "f16":  # the final rounding to half
        tol = tol + np.abs(want) * 2.0**-11 + 2.0**-25
    return {"y": (want.reshape(x.shape), (tol + 1e-300).reshape(x.shape))}
