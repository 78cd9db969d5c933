"""The host reference semantics of each family, in NumPy: what a correct call writes to its
output, for a :class:`~cudaenv.questions.cases.Case`.

The values are the families' own reference semantics (``adapter.reference_semantics``: the
NumPy module every generated problem's checker runs, written from what the prompt states, not
from any kernel), in float64, here checked to be exact in the type the kernel computes in and
the type it stores: :class:`NotExact` otherwise, so a question never asks for a rounded value.
This is one of the two independent paths the tests compare; the other runs the family's own
kernels (the numba-cuda simulator for the Python renderings, a GPU for the C++ ones).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from cudaenv.questions.adapter import Rendered, reference_semantics
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
    cols = case.scalars["cols"] if "ld" in case.scalars else x.shape[-1]
    want, _ = reference_semantics("reduce-axis").reduce(p, x, cols)  # first index on ties
    x = x[..., :cols]  # the padding is never read
    axis = {"row": 1, "col": 0, "mid": 1}[p["axis"]]
    op = p["op"]
    if op in ("argmax", "argmin"):
        return want.astype(np.int32)
    if op in ("sum", "mean"):
        s = x.sum(axis=axis)
        exact_in(s, _compute_type(r))
        if op == "mean" and not all(dyadic(t, x.shape[axis]) for t in s.reshape(-1)):
            raise NotExact("a mean is not exact")
    elif op == "norm2" and not np.array_equal(want * want, (x * x).sum(axis=axis)):
        raise NotExact("the norm is not exact")
    return exact_in(want, dtype_of(r, case.output))


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
    value, _ = reference_semantics("elementwise").bound(p["expr"], env, 0.0)
    exact = np.broadcast_to(value, out.shape)
    comp = np.broadcast_to(evaluate(p["expr"], env, _compute_type(r)), out.shape)
    if not np.array_equal(comp.astype(np.float64), exact):
        raise NotExact("the expression rounds in the compute type")
    return exact_in(exact, dtype_of(r, case.output))


# ---------------------------------------------------------------- scan
def _scan(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    x = case.arrays["x"]
    flags = [a for k, a in case.arrays.items() if k not in ("x", case.output)]
    lines = x.reshape(1, -1) if p["layout"] == "1d" else x
    sizes = {"rows": lines.shape[0], "cols": lines.shape[1]}
    arrays = {"x": x} | ({"flags": flags[0].reshape(x.shape)} if flags else {})
    ((want, _),) = reference_semantics("scan").expected(p, sizes, arrays).values()
    return exact_in(np.reshape(want, x.shape), dtype_of(r, case.output))


# ---------------------------------------------------------------- stencil
def stencil_taps(p: dict[str, Any]) -> list[tuple[int, int, float]]:
    """(row offset, column offset, weight) of every tap, in the order the prompt lists them."""
    return reference_semantics("stencil").taps(p)


def boundary_index(j: int, n: int, mode: str) -> int | None:
    """Where index ``j`` of an axis of length ``n`` reads (None: the zero boundary's 0)."""
    k = int(reference_semantics("stencil").index(np.array(j), n, mode))
    return None if k < 0 else k


def stencil(x: np.ndarray, taps: list[tuple[int, int, float]], mode: str) -> np.ndarray:
    """``sum w * x[boundary(r + a), boundary(c + b)]`` over the taps, in float64."""
    index = reference_semantics("stencil").index
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    rows, cols = x2.shape
    r_idx, c_idx = np.arange(rows)[:, None], np.arange(cols)[None, :]
    y = np.zeros(x2.shape)
    for a, b, w in taps:
        rr, cc = index(r_idx + a, rows, mode), index(c_idx + b, cols, mode)
        y += np.where((rr < 0) | (cc < 0), 0.0, w * x2[np.maximum(rr, 0), np.maximum(cc, 0)])
    return y.reshape(x.shape)


def _stencil(r: Rendered, case: Case) -> np.ndarray:
    x = case.arrays["x"]
    sizes = {"n": x.size} if x.ndim == 1 else {"rows": x.shape[0], "cols": x.shape[1]}
    ((y, _),) = reference_semantics("stencil").expected(r.params, sizes, {"x": x}).values()
    exact_in(y, _compute_type(r))
    return exact_in(y, dtype_of(r, case.output))


# ---------------------------------------------------------------- permute, matmul, indexing
def _permute(r: Rendered, case: Case) -> np.ndarray:
    x = case.arrays["x"]
    sizes = {f"d{k}": n for k, n in enumerate(x.shape)}
    ((y, _),) = reference_semantics("permute").expected(r.params, sizes, {"x": x}).values()
    return y


def _matmul(r: Rendered, case: Case) -> np.ndarray:
    p = r.params
    if p["epilogue"] == "bias_gelu":
        raise NotExact("the bias_gelu epilogue is not exact")
    a = case.arrays["A"]
    m, k = a.shape[::-1] if p["trans_a"] else a.shape
    sizes = {"M": m, "N": case.arrays["C"].shape[1], "K": k}
    arrays = {name: arr for name, arr in case.arrays.items() if name != "C"}
    ((c, _),) = reference_semantics("matmul").expected(p, sizes, arrays).values()
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
    arrays = {k: a for k, a in case.arrays.items() if k != case.output or p["op"] == "scatter_add"}
    sizes = {"n": arrays["idx"].size if "idx" in arrays else arrays["x"].size}
    if p["op"] != "histogram":  # the table's rows (gather) or the output's (scatter-add)
        sizes["rows"] = (arrays["table"] if p["op"] == "gather" else arrays["out"]).shape[0]
    ((want, _),) = reference_semantics("indexing").expected(p, sizes, arrays).values()
    if p["op"] == "gather":
        return np.asarray(want).copy()
    return exact_in(want, dtype_of(r, case.output))


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
