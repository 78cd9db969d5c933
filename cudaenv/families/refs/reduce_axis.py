"""reduce-axis reference semantics (NumPy only; shared by the C++ and Python renderings' checkers
and copied verbatim into each problem's ``check/reference.py``).

Parameters: ``axis`` (row | col | mid), ``op`` (sum mean norm2 max min absmax argmax argmin),
``dtype`` (f32 f64 f16), ``pitched``. Sizes: ``batch``, ``rows``, ``cols``, ``pad`` (the row
pitch is ``cols + pad``; the padding holds huge values of both signs that no correct solution
reads). ``x`` is ``(rows, cols + pad)`` (row, col) or ``(batch, rows, cols)`` (mid).
Value results (sum, mean, norm2) are in the accumulation type, within ``RTOL * S + ATOL`` of
the exact value (S: the sum of ``|x|``, divided by the count for the mean, the norm itself for
the norm); extremes are exact elements; indices are exact (the first on ties).
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
VALUE, EXTREME, ARG = ("sum", "mean", "norm2"), ("max", "min", "absmax"), ("argmax", "argmin")
#: input kinds: uniform draws from these ranges; "ties" draws integers -3..3
RANGES = {"uniform": (-1.0, 1.0), "scaled": (-100.0, 100.0), "negative": (-9.0, -1.0),
          "positive": (1.0, 9.0), "ties": (-3.0, 3.0)}  # fmt: skip
RTOL = {"float": 2e-5, "double": 1e-12}  # by accumulation type
ATOL = 1e-30
#: the padding's values (odd columns get the second), by element type
PAD = {"f32": (1e30, -1e30), "f64": (1e300, -1e300), "f16": (54016.0, -54016.0)}


def acc(p: dict) -> str:
    return "double" if p["dtype"] == "f64" else "float"


def out_dtype(p: dict) -> type:
    if p["op"] in ARG:
        return np.int32
    if p["op"] in EXTREME:
        return STORE[p["dtype"]]
    return np.float64 if p["dtype"] == "f64" else np.float32


def x_shape(p: dict, sizes: dict) -> tuple[int, ...]:
    if p["axis"] == "mid":
        return (sizes["batch"], sizes["rows"], sizes["cols"])
    return (sizes["rows"], sizes["cols"] + sizes.get("pad", 0))


def inputs(p: dict, sizes: dict) -> dict:
    return {"x": (x_shape(p, sizes), STORE[p["dtype"]])}


def outputs(p: dict, sizes: dict) -> dict:
    shape = {"row": lambda s: (s["rows"],), "col": lambda s: (s["cols"],),
             "mid": lambda s: (s["batch"], s["cols"])}[p["axis"]]  # fmt: skip
    return {"out": (shape(sizes), out_dtype(p))}


def _values(p: dict, shape: tuple[int, ...], cols: int, kind: str, rng) -> np.ndarray:
    """``shape``'s values of ``kind`` in their element type; columns from ``cols`` on are the
    padding."""
    if kind == "ties":  # small integers: extreme values repeat
        v = rng.integers(-3, 4, size=shape).astype(np.float64)
    else:
        lo, hi = RANGES[kind]
        v = rng.uniform(lo, hi, size=shape)
    x = v.astype(STORE[p["dtype"]])
    if shape and shape[-1] > cols:
        hi, lo = PAD[p["dtype"]]
        odd = (np.arange(shape[-1]) & 1).astype(bool)
        x[..., cols:] = np.where(odd[cols:], lo, hi).astype(x.dtype)
    return x


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    return {"x": _values(p, x_shape(p, sizes), sizes["cols"], kind, rng)}


def shifted(p: dict, sizes: dict, kind: str, calls: int, rng) -> dict:
    """The benchmark's input: ``calls`` extra rows of the row pitch, call ``r`` reading the
    window that starts ``r`` rows in (each call sees different data; one buffer in memory)."""
    ld = sizes["cols"] + sizes.get("pad", 0)
    rows = sizes.get("batch", 1) * sizes["rows"] if p["axis"] == "mid" else sizes["rows"]
    return {"x": (_values(p, (rows + calls, ld), sizes["cols"], kind, rng), ld)}


def reduce(p: dict, x: np.ndarray, cols: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(want, tol) of the reduction of ``x`` (tol None: exact), in float64 (indices: int32)."""
    v = x.astype(np.float64)[..., :cols]
    axis = {"row": 1, "col": 0, "mid": 1}[p["axis"]]
    op, length = p["op"], v.shape[axis]
    if op in ARG:
        pick = np.argmax if op == "argmax" else np.argmin  # the first index on ties
        return pick(v, axis=axis).astype(np.int32), None
    if op in EXTREME:
        w = np.abs(v) if op == "absmax" else v
        return (w.min(axis=axis) if op == "min" else w.max(axis=axis)), None
    r = RTOL[acc(p)]
    if op == "norm2":
        want = np.sqrt((v * v).sum(axis=axis))
        return want, r * want + ATOL
    want, mag = v.sum(axis=axis), np.abs(v).sum(axis=axis)
    if op == "mean":
        want, mag = want / length, mag / length
    return want, r * mag + ATOL


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    return {"out": reduce(p, arrays["x"], sizes["cols"])}
