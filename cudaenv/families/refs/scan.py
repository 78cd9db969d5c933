"""scan reference semantics (NumPy only; shared by the C++ and Python renderings' checkers and
copied verbatim into each problem's ``check/reference.py``).

Parameters: ``kind`` (inclusive exclusive), ``op`` (add max min), ``dtype`` (f32 f64 i32),
``layout`` (1d: one array of ``cols`` elements; rows: every row of ``(rows, cols)`` on its own),
``segmented`` (``flags``, int32 of the same shape: a non-zero flag starts a segment; the first
element of the array or row always does). An exclusive scan's first element of a segment is the
identity (0; -inf/+inf, INT_MIN/INT_MAX for int). Float additions: ``|out - exact| <= R * sum
|x|`` over the elements combined into ``out[i]``; everything else is exact.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
RTOL = {"float": 2e-5, "double": 1e-12}
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
#: input kinds: uniform (float in [-1, 1], int in [-100, 100]), all negative, all positive
RANGES = {
    "int": {"uniform": (-100, 100), "negative": (-100, -1), "positive": (1, 100)},
    "float": {"uniform": (-1.0, 1.0), "negative": (-9.0, -1.0), "positive": (1.0, 9.0)},
}


def shape(p: dict, sizes: dict) -> tuple[int, ...]:
    return (sizes["cols"],) if p["layout"] == "1d" else (sizes["rows"], sizes["cols"])


def inputs(p: dict, sizes: dict) -> dict:
    s = shape(p, sizes)
    out = {"x": (s, STORE[p["dtype"]])}
    return out | ({"flags": (s, np.int32)} if p["segmented"] else {})


def outputs(p: dict, sizes: dict) -> dict:
    return {"out": (shape(p, sizes), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    s = shape(p, sizes)
    if p["dtype"] == "i32":
        lo, hi = RANGES["int"][kind]
        x = rng.integers(lo, hi + 1, size=s).astype(np.int32)
    else:
        lo, hi = RANGES["float"][kind]
        x = rng.uniform(lo, hi, size=s).astype(STORE[p["dtype"]])
    out = {"x": x}
    if p["segmented"]:
        out["flags"] = (rng.integers(0, 8, size=s) == 0).astype(np.int32)
    return out


def identity(p: dict) -> float:
    integer = p["dtype"] == "i32"
    return {"add": 0.0, "max": float(INT_MIN) if integer else -np.inf,
            "min": float(INT_MAX) if integer else np.inf}[p["op"]]  # fmt: skip


def inclusive(x: np.ndarray, heads: np.ndarray, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Every row's inclusive scan within its segments, and the running sum of |x| (float64,
    combined left to right as a sequential loop would)."""
    fn = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]
    if not heads[:, 1:].any():  # one segment per row
        return fn.accumulate(x, axis=1), np.add.accumulate(np.abs(x), axis=1)
    # the elements of every segment by their position in it: position k joins k - 1's result
    run = np.where(heads, x, 0.0)
    mag = np.where(heads, np.abs(x), 0.0)
    flat_heads = heads.reshape(-1)
    start = np.maximum.accumulate(np.where(flat_heads, np.arange(flat_heads.size), 0))
    pos = np.arange(flat_heads.size) - start
    order = np.argsort(pos, kind="stable")
    bounds = np.searchsorted(pos[order], np.arange(pos.max() + 2))
    r, m, xf = run.reshape(-1), mag.reshape(-1), x.reshape(-1)
    for k in range(1, pos.max() + 1):
        at = order[bounds[k] : bounds[k + 1]]
        r[at] = fn(r[at - 1], xf[at])
        m[at] = m[at - 1] + np.abs(xf[at])
    return r.reshape(x.shape), m.reshape(x.shape)


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    x = arrays["x"].astype(np.float64)
    if x.size == 0:
        return {"out": (x, None)}
    x2 = np.atleast_2d(x)
    heads = np.zeros(x2.shape, dtype=bool)
    if p["segmented"]:
        heads = np.atleast_2d(arrays["flags"]) != 0
    heads[:, 0] = True
    run, mag = inclusive(x2, heads, p["op"])
    if p["kind"] == "exclusive":
        before = np.empty_like(run)
        before[:, 1:], before[:, :1] = run[:, :-1], 0.0
        prev = np.empty_like(mag)
        prev[:, 1:], prev[:, :1] = mag[:, :-1], 0.0
        run = np.where(heads, identity(p), before)
        mag = np.where(heads, 0.0, prev)
    exact = p["dtype"] == "i32" or p["op"] != "add"
    acc = "double" if p["dtype"] == "f64" else "float"
    tol = None if exact else (RTOL[acc] * mag).reshape(x.shape)
    return {"out": (run.reshape(x.shape), tol)}
