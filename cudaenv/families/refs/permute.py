"""permute reference semantics (NumPy only; shared by the C++ and Python renderings' checkers and
copied verbatim into each problem's ``check/reference.py``).

Parameters: ``perm`` (a permutation of the axes of a 2-, 3- or 4-D array) and ``dtype`` (f32
f64 f16 i32). Sizes ``d0`` .. ``d{n-1}`` are ``x``'s shape; ``y = x.transpose(perm)``, stored
row-major. Exact: a permutation only moves values.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32}


def shape(p: dict, sizes: dict) -> tuple[int, ...]:
    return tuple(sizes[f"d{k}"] for k in range(len(p["perm"])))


def inputs(p: dict, sizes: dict) -> dict:
    return {"x": (shape(p, sizes), STORE[p["dtype"]])}


def outputs(p: dict, sizes: dict) -> dict:
    s = shape(p, sizes)
    return {"y": (tuple(s[q] for q in p["perm"]), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    s = shape(p, sizes)
    if p["dtype"] == "i32":
        return {"x": rng.integers(-1000, 1001, size=s).astype(np.int32)}
    return {"x": rng.uniform(-100.0, 100.0, size=s).astype(STORE[p["dtype"]])}


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    return {"y": (np.ascontiguousarray(arrays["x"].transpose(p["perm"])), None)}
