"""Small calls of a family's interface: inputs of at most 64 exactly representable values and
the contents of the output before the call, drawn from a seeded ``random.Random``.

A :class:`Case` names every argument as the interface does; arrays keep the shape the caller
sees (Python) or the shape of the row-major buffer (C++, shown flat). Which values are drawn is
chosen so that every result the host reference computes is exact in the output's type: small
integers, halves and quarters, products and sums that need few bits. The reference semantics
themselves are in :mod:`cudaenv.questions.semantics`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cudaenv.questions.adapter import Rendered

MAX_INPUT_VALUES = 64
SENTINEL = -99  # what the output holds before the call (shown in the question)
NP_TYPES = {"float": "float32", "double": "float64", "__half": "float16", "int": "int32"}
PY_TYPES = {"f32": "float32", "f64": "float64", "i32": "int32", "f16": "float16"}
#: expression operators whose results stay exact on the values drawn (no tanh, exp, sigmoid)
EXACT_OPS = {"add", "sub", "mul", "max", "min", "abs", "relu", "scale", "shift", "sq"}
REDUCE_OPS = {"sum", "mean", "norm2", "max", "min", "absmax", "argmax", "argmin"}
HIST_BINS = 16  # histogram questions use the 16-bin problems only (answers stay short)


@dataclass
class Case:
    """One call: every array argument (inputs, and the output as it is before the call) and
    every size argument, by the interface's names."""

    arrays: dict[str, np.ndarray]
    scalars: dict[str, int] = field(default_factory=dict)
    output: str = "out"

    def inputs(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.arrays.items() if k != self.output}

    def input_values(self) -> int:
        return sum(int(a.size) for a in self.inputs().values())


def dtype_of(r: Rendered, name: str) -> str:
    """The NumPy dtype of array argument ``name`` of ``r``'s interface."""
    if r.language == "cuda_cpp":
        return NP_TYPES[r.interface.param(name).ctype]
    p = r.params
    if r.base == "reduce-axis" and name == r.interface.outputs()[0]:
        return "int32" if p["op"] in ("argmax", "argmin") else PY_TYPES[p["dtype"]]
    if name in ("fl", "flags", "idx"):
        return "int32"
    return PY_TYPES[p["dtype"]]


def _ints(rng: random.Random, shape: tuple[int, ...], lo: int, hi: int) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    return np.array([rng.randint(lo, hi) for _ in range(n)], dtype=np.float64).reshape(shape)


def _halves(rng: random.Random, shape: tuple[int, ...], top: int = 4) -> np.ndarray:
    """Multiples of 1/2 in [-top/2, top/2]."""
    return _ints(rng, shape, -top, top) / 2.0


def _out(r: Rendered, shape: tuple[int, ...]) -> np.ndarray:
    name = r.interface.outputs()[0]
    return np.full(shape, SENTINEL, dtype=dtype_of(r, name))


def _typed(r: Rendered, name: str, values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(dtype_of(r, name))


def _draw_reduce(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    if p["op"] not in REDUCE_OPS:
        return None
    axis, cpp = p["axis"], r.language == "cuda_cpp"
    wide = rng.random() < 0.3
    if axis == "mid":
        shape = (rng.randint(1, 3), rng.randint(2, 6), rng.randint(1, 4))
    elif axis == "row":
        shape = (1, rng.randint(33, 56)) if wide else (rng.randint(1, 4), rng.randint(1, 12))
    else:
        shape = (rng.randint(33, 56), 1) if wide else (rng.randint(2, 15), rng.randint(1, 4))
    lo, hi = (-3, 3) if rng.random() < 0.4 else (-9, 9)
    x = _ints(rng, shape, lo, hi)
    scalars: dict[str, int] = {}
    if cpp:
        if axis == "mid":
            scalars = {"batch": shape[0], "rows": shape[1], "cols": shape[2]}
        else:
            scalars = {"rows": shape[0], "cols": shape[1]}
        if p.get("pitched"):
            pad = rng.randint(1, 3)
            scalars["ld"] = shape[1] + pad
            x = np.concatenate([x, np.full((shape[0], pad), 77.0)], axis=1)  # never read
    n_out = {"row": shape[:1], "col": shape[1:2], "mid": (shape[0], shape[-1])}[axis]
    out = r.interface.outputs()[0]
    return Case({"x": _typed(r, "x", x), out: _out(r, n_out)}, scalars, out)


def _draw_elementwise(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    if not _ops(p["expr"]) <= EXACT_OPS:
        return None
    rows, cols = (
        (1, rng.randint(33, 40)) if rng.random() < 0.2 else (rng.randint(1, 4), rng.randint(1, 8))
    )
    cpp = r.language == "cuda_cpp"
    arrays: dict[str, np.ndarray] = {}
    for i, b in enumerate(p["bcast"]):
        shape = {"full": (rows, cols), "row": (cols,), "col": (rows,) if cpp else (rows, 1)}[b]
        arrays[f"x{i}"] = _typed(r, f"x{i}", _halves(rng, shape))
    out = r.interface.outputs()[0]
    arrays[out] = _out(r, (rows, cols))
    return Case(arrays, {"rows": rows, "cols": cols} if cpp else {}, out)


def _ops(tree: Any) -> set[str]:
    if isinstance(tree, str):
        return set()
    return {tree[0]}.union(*(_ops(t) for t in tree[1:] if not isinstance(t, float)))


def _draw_scan(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    cpp = r.language == "cuda_cpp"
    if p["layout"] == "1d":
        n = rng.randint(33, 48) if rng.random() < 0.3 and not p["segmented"] else rng.randint(1, 24)
        shape: tuple[int, ...] = (n,)
        scalars = {"n": n}
    else:
        shape = (rng.randint(1, 4), rng.randint(1, 10))
        scalars = {"rows": shape[0], "cols": shape[1]}
    arrays = {"x": _typed(r, "x", _ints(rng, shape, -9, 9))}
    if p["segmented"]:
        name = next(
            q.name for q in r.interface.params if q.name not in ("x", r.interface.outputs()[0])
        )
        flags = np.array([1 if rng.random() < 0.25 else 0 for _ in range(int(np.prod(shape)))])
        arrays[name] = flags.reshape(shape).astype(np.int32)
    out = r.interface.outputs()[0]
    arrays[out] = _out(r, shape)
    return Case(arrays, scalars if cpp else {}, out)


def _draw_stencil(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    cpp = r.language == "cuda_cpp"
    if p["dim"] == 1:
        n = rng.randint(33, 40) if rng.random() < 0.2 else rng.randint(1, 16)
        shape: tuple[int, ...] = (n,)
        scalars = {"n": n}
    else:
        shape = (rng.randint(1, 6), rng.randint(1, 9))
        scalars = {"rows": shape[0], "cols": shape[1]}
    x = _ints(rng, shape, -4, 4) if rng.random() < 0.5 else _halves(rng, shape)
    out = r.interface.outputs()[0]
    return Case({"x": _typed(r, "x", x), out: _out(r, shape)}, scalars if cpp else {}, out)


def _draw_permute(r: Rendered, rng: random.Random) -> Case | None:
    rank = len(r.params["perm"])
    for _ in range(50):
        shape = tuple(rng.randint(1, {2: 7, 3: 4, 4: 3}[rank]) for _ in range(rank))
        if 2 <= int(np.prod(shape)) <= 48:
            break
    else:  # pragma: no cover - the loop finds one at once
        return None
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    out = r.interface.outputs()[0]
    y = _out(r, tuple(shape[q] for q in r.params["perm"]))
    scalars = {f"d{i}": s for i, s in enumerate(shape)} if r.language == "cuda_cpp" else {}
    return Case({"x": _typed(r, "x", x), out: y}, scalars, out)


def _draw_matmul(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    if p["epilogue"] == "bias_gelu":
        return None
    m, n, k = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    a = _ints(rng, (k, m) if p["trans_a"] else (m, k), -3, 3)
    b = _ints(rng, (n, k) if p["trans_b"] else (k, n), -3, 3)
    arrays = {"A": _typed(r, "A", a), "B": _typed(r, "B", b)}
    if p["epilogue"] in ("bias", "bias_relu"):
        arrays["bias"] = _typed(r, "bias", _ints(rng, (n,), -4, 4))
    elif p["epilogue"] in ("residual", "scale_residual"):
        arrays["D"] = _typed(r, "D", _ints(rng, (m, n), -4, 4))
    arrays["C"] = _out(r, (m, n))
    return Case(arrays, {"M": m, "N": n, "K": k}, "C")


def _draw_indexing(r: Rendered, rng: random.Random) -> Case | None:
    p = r.params
    op, d = p["op"], p["width"]
    if op == "histogram":
        if d != HIST_BINS:
            return None
        n = rng.randint(1, 16)
        # eighths from -1/2 to a half past the last bin: some values fall outside the range
        x = np.array([rng.randint(-4, 2 * d + 4) / 8.0 for _ in range(n)])
        arrays = {"x": _typed(r, "x", x)}
        if p["weighted"]:
            arrays["w"] = _typed(r, "w", _ints(rng, (n,), -8, 8) / 4.0)
        arrays["hist"] = _out(r, (d,))
        return Case(arrays, {"n": n}, "hist")
    if d > 4:
        return None
    rows, n = rng.randint(1, 5), rng.randint(1, 8)
    idx = np.array([rng.randrange(rows) for _ in range(n)], dtype=np.int32)
    integer = dtype_of(r, "out") == "int32"
    values = (lambda s: _ints(rng, s, -9, 9)) if integer else (lambda s: _halves(rng, s, 8))
    if op == "gather":
        arrays = {"table": _typed(r, "table", values((rows, d))), "idx": idx}
        arrays["out"] = _out(r, (n, d))
    else:
        arrays = {"x": _typed(r, "x", values((n, d))), "idx": idx}
        if p["weighted"]:
            arrays["w"] = _typed(r, "w", _ints(rng, (n,), -4, 4) / 2.0)
        arrays["out"] = _typed(r, "out", _ints(rng, (rows, d), -5, 5))  # kept where not added to
    return Case(arrays, {"n": n, "rows": rows}, "out")


_DRAW = {
    "reduce-axis": _draw_reduce,
    "elementwise": _draw_elementwise,
    "scan": _draw_scan,
    "stencil": _draw_stencil,
    "permute": _draw_permute,
    "matmul": _draw_matmul,
    "indexing": _draw_indexing,
}


def has_cases(base: str) -> bool:
    """Whether the family's results can be exact (rownorm's cannot: exp, sqrt, division)."""
    return base in _DRAW


def draw_case(r: Rendered, rng: random.Random) -> Case | None:
    """A call of ``r``'s interface with at most 64 input values, or None when this parameter
    set has no exact results (an expression with ``tanh``, a GELU epilogue, a wide row)."""
    draw = _DRAW.get(r.base)
    if draw is None:
        return None
    case = draw(r, rng)
    if case is None or case.input_values() > MAX_INPUT_VALUES:
        return None
    return case


__all__ = [
    "EXACT_OPS",
    "MAX_INPUT_VALUES",
    "SENTINEL",
    "Case",
    "draw_case",
    "dtype_of",
    "has_cases",
]
