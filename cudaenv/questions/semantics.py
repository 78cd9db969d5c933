"""The host reference semantics of each family, in NumPy: what a correct call writes to its
output, for a :class:`~cudaenv.questions.cases.Case`.

Written from what each problem's prompt states (not from any kernel), in float64 where the
values are exact, and checked to be exact in the type the kernel computes in and the type it
stores: :class:`NotExact` otherwise, so a question never asks for a rounded value. This is one
of the two independent paths the tests compare; the other runs the family's own kernels (the
numba-cuda simulator for the Python renderings, a GPU for the C++ ones).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from cudaenv.questions.adapter import Rendered
from cudaenv.questions.cases import Case, dtype_of

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


class NotExact(ValueError):
    """The result is not exactly representable where the kernel computes or stores it."""


def exact_in(values: np.ndarray, dtype: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    typed = values.astype(dtype)
    if not np.array_equal(typed.astype(np.float64), values):
        raise NotExact(f"a result is not exact in {dtype}")
    return typed


def dyadic(numerator: float, denominator: int) -> bool:
    """Whether ``numerator / denominator`` (an integer over a count) is a binary fraction."""
    q = Fraction(int(numerator), denominator) if float(numerator).is_integer() else None
    return q is not None and q.denominator & (q.denominator - 1) == 0


def _compute_type(r: Rendered) -> str:
    """The type the kernels compute in: float for half data, else the data's type."""
    dtype = dtype_of(r, "x") if "x" in {p.name for p in r.interface.params} else "float32"
    return "float32" if dtype == "float16" else dtype


# ---------------------------------------------------------------- reduce-axis
def _reduce(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    x = case.arrays["x"].astype(np.float64)
    if "ld" in case.scalars:
        x = x[:, : case.scalars["cols"]]  # the padding is never read
    axis = {"row": 1, "col": 0, "mid": 1}[p["axis"]]
    op = p["op"]
    if op in ("argmax", "argmin"):  # the first extreme index on ties, as NumPy's
        return (np.argmax if op == "argmax" else np.argmin)(x, axis=axis).astype(np.int32)
    if op in ("sum", "mean"):
        s = x.sum(axis=axis)
        exact_in(s, _compute_type(r))
        v = s / x.shape[axis] if op == "mean" else s
        if op == "mean" and not all(dyadic(t, x.shape[axis]) for t in s.reshape(-1)):
            raise NotExact("a mean is not exact")
    elif op == "norm2":
        s = (x * x).sum(axis=axis)
        v = np.sqrt(s)
        if not np.array_equal(v * v, s):
            raise NotExact("the norm is not exact")
    else:
        base = np.abs(x) if op == "absmax" else x
        v = base.min(axis=axis) if op == "min" else base.max(axis=axis)
    return exact_in(v, dtype_of(r, case.output))


# ---------------------------------------------------------------- elementwise
def evaluate(tree: Any, env: dict[str, np.ndarray], dtype: str) -> np.ndarray:
    """An expression tree (the family's JSON form) evaluated with every operation in ``dtype``."""
    if isinstance(tree, str):
        return env[tree].astype(dtype)
    op, *args = tree
    a = evaluate(args[0], env, dtype)
    t = np.dtype(dtype).type
    if op in ("add", "sub", "mul", "max", "min"):
        b = evaluate(args[1], env, dtype)
        fns: dict[str, Callable[[Any, Any], Any]] = {
            "add": np.add, "sub": np.subtract, "mul": np.multiply,
            "max": np.maximum, "min": np.minimum,
        }  # fmt: skip
        return fns[op](a, b).astype(dtype)
    if op == "scale":
        return (a * t(args[1])).astype(dtype)
    if op == "shift":
        return (a + t(args[1])).astype(dtype)
    if op == "abs":
        return np.abs(a)
    if op == "relu":
        return np.maximum(a, t(0))
    if op == "sq":
        return (a * a).astype(dtype)
    raise NotExact(f"{op} is not exact")


def _elementwise(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    out = case.arrays[case.output]
    env = {}
    for i, b in enumerate(p["bcast"]):
        v = case.arrays[f"x{i}"].astype(np.float64)
        env[f"x{i}"] = v.reshape(-1, 1) if b == "col" else v
    exact = np.broadcast_to(evaluate(p["expr"], env, "float64"), out.shape)
    comp = np.broadcast_to(evaluate(p["expr"], env, _compute_type(r)), out.shape)
    if not np.array_equal(comp.astype(np.float64), exact):
        raise NotExact("the expression rounds in the compute type")
    return exact_in(exact, dtype_of(r, case.output))


# ---------------------------------------------------------------- scan
def _scan_line(
    x: np.ndarray, heads: np.ndarray, op: str, inclusive: bool, ident: float
) -> np.ndarray:
    fn = {"add": lambda a, b: a + b, "max": max, "min": min}[op]
    out = np.empty(len(x), dtype=np.float64)
    run = ident
    for i, v in enumerate(x):
        if heads[i]:
            run = ident
        before = run
        run = v if heads[i] else fn(run, v)
        out[i] = run if inclusive else before
    return out


def _scan(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    x = case.arrays["x"].astype(np.float64)
    integer = dtype_of(r, "x") == "int32"
    ident = {"add": 0.0, "max": float(INT_MIN) if integer else -np.inf,
             "min": float(INT_MAX) if integer else np.inf}[p["op"]]  # fmt: skip
    flags = [a for k, a in case.arrays.items() if k not in ("x", case.output)]
    lines = x.reshape(1, -1) if p["layout"] == "1d" else x
    fl = flags[0].reshape(lines.shape) if flags else np.zeros(lines.shape, dtype=np.int32)
    out = np.empty(lines.shape)
    for i, line in enumerate(lines):
        heads = fl[i] != 0
        if len(heads):
            heads[0] = True
        out[i] = _scan_line(line, heads, p["op"], p["kind"] == "inclusive", ident)
    return exact_in(out.reshape(x.shape), dtype_of(r, case.output))


# ---------------------------------------------------------------- stencil
def stencil_taps(p: dict[str, Any]) -> list[tuple[int, int, float]]:
    """(row offset, column offset, weight) of every tap, in the order the prompt lists them."""
    r = p["radius"]
    if p["dim"] == 1:
        offs = [(0, k) for k in range(-r, r + 1)]
    elif p["shape"] == "box":
        offs = [(a, b) for a in range(-r, r + 1) for b in range(-r, r + 1)]
    else:
        offs = sorted([(0, 0)] + [(a, 0) for a in range(-r, r + 1) if a]
                      + [(0, b) for b in range(-r, r + 1) if b])  # fmt: skip
    return [(a, b, w) for (a, b), w in zip(offs, p["weights"], strict=True)]


def boundary_index(j: int, n: int, mode: str) -> int | None:
    """Where index ``j`` of an axis of length ``n`` reads (None: the zero boundary's 0)."""
    if 0 <= j < n:
        return j
    if mode == "zero":
        return None
    if mode == "clamp":
        return 0 if j < 0 else n - 1
    if mode == "wrap":
        return j % n
    if n == 1:  # mirror, period 2n - 2
        return 0
    m = j % (2 * n - 2)
    return m if m < n else 2 * n - 2 - m


def stencil(x: np.ndarray, taps: list[tuple[int, int, float]], mode: str) -> np.ndarray:
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    rows, cols = x2.shape
    y = np.zeros(x2.shape)
    for r in range(rows):
        for c in range(cols):
            acc = 0.0
            for a, b, w in taps:
                rr, cc = boundary_index(r + a, rows, mode), boundary_index(c + b, cols, mode)
                acc += 0.0 if rr is None or cc is None else w * x2[rr, cc]
            y[r, c] = acc
    return y.reshape(x.shape)


def _stencil(r: Rendered, case: Case) -> np.ndarray:
    y = stencil(case.arrays["x"].astype(np.float64), stencil_taps(r.params), r.params["boundary"])
    exact_in(y, _compute_type(r))
    return exact_in(y, dtype_of(r, case.output))


# ---------------------------------------------------------------- permute, matmul, indexing
def _permute(r: Rendered, case: Case) -> np.ndarray:
    return case.arrays["x"].transpose(r.params["perm"]).copy()


def _matmul(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    a, b = case.arrays["A"].astype(np.float64), case.arrays["B"].astype(np.float64)
    c = (a.T if p["trans_a"] else a) @ (b.T if p["trans_b"] else b)
    epi = p["epilogue"]
    if epi in ("bias", "bias_relu"):
        c = c + case.arrays["bias"].astype(np.float64)
        if epi == "bias_relu":
            c = np.maximum(c, 0.0)
    elif epi == "residual":
        c = c + case.arrays["D"]
    elif epi == "scale_residual":
        c = 0.5 * c - 1.5 * case.arrays["D"].astype(np.float64)
    elif epi != "none":
        raise NotExact(f"the {epi} epilogue is not exact")
    exact_in(c, _compute_type(r) if r.params["dtype"] != "f64" else "float64")
    return exact_in(c, dtype_of(r, "C"))


def histogram_bins(x: np.ndarray, bins: int, policy: str) -> list[int | None]:
    out: list[int | None] = []
    for v in x.astype(np.float64):
        b = int(np.floor(4.0 * v))
        if policy == "clamp":
            b = min(max(b, 0), bins - 1)
        out.append(b if 0 <= b < bins else None)
    return out


def _indexing(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    dtype = dtype_of(r, case.output)
    if p["op"] == "gather":
        return case.arrays["table"][case.arrays["idx"]].copy()
    if p["op"] == "scatter_add":
        out = case.arrays["out"].astype(np.float64)
        w = case.arrays.get("w")
        for i, k in enumerate(case.arrays["idx"]):
            out[k] += case.arrays["x"][i].astype(np.float64) * (
                float(w[i]) if w is not None else 1.0
            )
        return exact_in(out, dtype)
    hist = np.zeros(p["width"])
    w = case.arrays.get("w")
    for i, b in enumerate(histogram_bins(case.arrays["x"], p["width"], p["policy"])):
        if b is not None:
            hist[b] += float(w[i]) if w is not None else 1.0
    return exact_in(hist, dtype)


_EXPECTED: dict[str, Callable[[Rendered, Case], np.ndarray]] = {
    "reduce-axis": _reduce,
    "elementwise": _elementwise,
    "scan": _scan,
    "stencil": _stencil,
    "permute": _permute,
    "matmul": _matmul,
    "indexing": _indexing,
}


def expected(r: Rendered, case: Case) -> np.ndarray:
    """What a correct call writes to ``case.output`` (the whole array, in its dtype).

    Raises NotExact when a result would be rounded, and KeyError for a family without exact
    semantics here (rownorm).
    """
    return _EXPECTED[r.base](r, case)


__all__ = [
    "NotExact",
    "boundary_index",
    "evaluate",
    "exact_in",
    "expected",
    "histogram_bins",
    "stencil",
    "stencil_taps",
]
