"""indexing reference semantics (NumPy only; copied verbatim into each problem's
``check/reference.py``).

Parameters: ``op`` (gather scatter_add histogram), ``dtype`` (f32 f64 f16 i32; histograms read
floats), ``width`` (the row width ``d``; a histogram's bin count), ``weighted``, ``policy``
(histogram values outside the range: drop or clamp), ``dist`` (uniform; hot: half of the
indices 0, half of the histogram's values in bin 3). gather: ``out[i] = table[idx[i]]``,
exact. scatter_add: ``out[idx[i]] += (w[i] *) x[i]`` from ``out``'s previous values, within
``2 (m + 1) u (|out0| + sum |terms|)`` for ``m`` terms (exact for int). histogram: bin
``floor(4 v)`` of ``[0, d)``; counts exact, weighted sums within ``2 (m + 1) 2^-24 sum |w|``.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32}
BIN_WIDTH = 0.25  # bins are [k/4, (k+1)/4): floor(4 x), exact in float


def _u(p: dict) -> float:
    return {"f32": 2.0**-24, "f64": 2.0**-53}.get(p["dtype"], 0.0)


def inputs(p: dict, sizes: dict) -> dict:
    d, n = p["width"], sizes["n"]
    if p["op"] == "histogram":
        return {"x": ((n,), np.float32)} | ({"w": ((n,), np.float32)} if p["weighted"] else {})
    dt, rows = STORE[p["dtype"]], sizes["rows"]
    if p["op"] == "gather":
        return {"table": ((rows, d), dt), "idx": ((n,), np.int32)}
    out = {"x": ((n, d), dt), "idx": ((n,), np.int32)}
    if p["weighted"]:
        out["w"] = ((n,), dt)
    return out | {"out": ((rows, d), dt)}  # scatter-add adds to out's previous values


def outputs(p: dict, sizes: dict) -> dict:
    if p["op"] == "histogram":
        return {"hist": ((p["width"],), np.float32 if p["weighted"] else np.int32)}
    rows = sizes["n"] if p["op"] == "gather" else sizes["rows"]
    return {"out": ((rows, p["width"]), STORE[p["dtype"]])}


def _values(p: dict, shape: tuple[int, ...], rng) -> np.ndarray:
    if p["dtype"] == "i32":
        return rng.integers(-100, 101, size=shape).astype(np.int32)
    return rng.uniform(-1.0, 1.0, shape).astype(STORE[p["dtype"]])


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    n, d, hot = sizes["n"], p["width"], kind == "hot"
    if p["op"] == "histogram":
        # multiples of 1/32 from -d/64 to about 9d/32 (some out of range on both sides, edges
        # exact); hot: half of them in bin 3
        x = (rng.integers(0, 9 * d, n) - d // 2).astype(np.float32) / np.float32(32)
        if hot:
            hit = rng.integers(0, 2, n).astype(bool)
            x = np.where(hit, np.float32(0.75) + rng.integers(0, 8, n) / np.float32(32), x)
        out = {"x": x.astype(np.float32)}
        if p["weighted"]:
            out["w"] = rng.uniform(-2.0, 2.0, n).astype(np.float32)
        return out
    rows = sizes["rows"]
    idx = rng.integers(0, max(rows, 1), n).astype(np.int32)
    if hot:
        idx = np.where(rng.integers(0, 2, n).astype(bool), 0, idx).astype(np.int32)
    if p["op"] == "gather":
        return {"table": _values(p, (rows, d), rng), "idx": idx}
    out = {"x": _values(p, (n, d), rng), "idx": idx}
    if p["weighted"]:
        out["w"] = (
            _values(p, (n,), rng)
            if p["dtype"] == "i32"
            else rng.uniform(-2.0, 2.0, n).astype(STORE[p["dtype"]])
        )
    return out | {"out": _values(p, (rows, d), rng)}


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    d = p["width"]
    if p["op"] == "gather":
        return {"out": (arrays["table"][arrays["idx"]], None)}
    if p["op"] == "scatter_add":
        out0 = arrays["out"].astype(np.float64)
        terms = arrays["x"].astype(np.float64)
        if p["weighted"]:
            terms = terms * arrays["w"].astype(np.float64)[:, None]
        want, mag = out0.copy(), np.abs(out0)
        count = np.zeros(out0.shape)
        np.add.at(want, arrays["idx"], terms)
        np.add.at(mag, arrays["idx"], np.abs(terms))
        np.add.at(count, arrays["idx"], 1.0)
        if p["dtype"] == "i32":
            return {"out": (want, None)}
        return {"out": (want, 2.0 * (count + 1.0) * _u(p) * mag)}
    b = np.floor(arrays["x"].astype(np.float64) / BIN_WIDTH).astype(np.int64)
    keep = (b >= 0) & (b < d) if p["policy"] == "drop" else np.ones(b.shape, dtype=bool)
    b = np.clip(b, 0, d - 1)[keep]
    w = arrays["w"].astype(np.float64)[keep] if p["weighted"] else np.ones(b.shape)
    want = np.bincount(b, weights=w, minlength=d).astype(np.float64)
    if not p["weighted"]:
        return {"hist": (want, None)}
    mag = np.bincount(b, weights=np.abs(w), minlength=d)
    count = np.bincount(b, minlength=d).astype(np.float64)
    return {"hist": (want, 2.0 * (count + 1.0) * 2.0**-24 * mag)}
