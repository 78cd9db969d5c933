"""Small models of the mutants the families declare: what each wrong solution writes for a
:class:`~cudaenv.questions.cases.Case`, computed from the host reference semantics and the one
bug the family says the mutant carries.

A model is keyed by (family, mutant name), because the same name means different bugs in
different families (py-scan's "boundary" ignores the segment heads; scan's restarts every
1024-element tile). A model returns None where the mutant's output is not determined (a race,
an overwrite whose winner depends on timing, a tie an unordered reduction breaks either way),
and such cases make no question. The Python models are checked against numba-cuda simulator
runs of the family's own mutants; the C++ ones against a GPU (``scripts/gpu-check.sh``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cudaenv.questions import mutants_moves
from cudaenv.questions import semantics as sem
from cudaenv.questions.adapter import (
    Rendered,
    Variant,
    swapped_expression,
    swapped_reduce_op,
    wrong_boundary,
)
from cudaenv.questions.cases import Case, dtype_of
from cudaenv.questions.mutant_base import initial, typed, with_params

Model = Callable[[Rendered, Case], "np.ndarray | None"]
ARG_NONE = 2147483647  # an arg-reduction that saw no element keeps its initial index


# ---------------------------------------------------------------- elementwise
def _ew_tail(r: Rendered, case: Case) -> np.ndarray:
    out, want = initial(case), sem.expected(r, case)
    keep = case.arrays[case.output].shape[1]
    keep -= keep % 32
    out[:, :keep] = want[:, :keep]
    return out


def _ew_last_row(r: Rendered, case: Case) -> np.ndarray:
    out, want = initial(case), sem.expected(r, case)
    out[:-1] = want[:-1]
    return out


def _ew_operator(r: Rendered, case: Case) -> np.ndarray:
    return sem.expected(with_params(r, case, expr=swapped_expression(r.params["expr"])), case)


def _ew_axis(r: Rendered, case: Case) -> np.ndarray:
    bc = r.params["bcast"]
    k = next(i for i, b in enumerate(bc) if b != "full")
    rows, cols = case.arrays[case.output].shape
    v = case.arrays[f"x{k}"].reshape(-1)
    if bc[k] == "row":  # the row vector read at r % cols: constant along each row
        wrong = np.array([[v[i % cols]] * cols for i in range(rows)])
    else:  # the column vector read at c % rows: constant along each column
        wrong = np.array([[v[c % rows] for c in range(cols)]] * rows)
    arrays = dict(case.arrays)
    arrays[f"x{k}"] = wrong.astype(case.arrays[f"x{k}"].dtype)
    return sem.expected(
        with_params(r, case, bcast=[*bc[:k], "full", *bc[k + 1 :]]),
        Case(arrays, case.scalars, case.output),
    )


def _ew_precision(narrow: str) -> Model:
    def model(r: Rendered, case: Case) -> np.ndarray | None:
        env = {}
        for i, b in enumerate(r.params["bcast"]):
            v = case.arrays[f"x{i}"].astype(np.float64)
            env[f"x{i}"] = v.reshape(-1, 1) if b == "col" else v
        shape = case.arrays[case.output].shape
        return typed(r, case, np.broadcast_to(sem.evaluate(r.params["expr"], env, narrow), shape))

    return model


# ---------------------------------------------------------------- reduce-axis
def _reduce_length(r: Rendered, case: Case) -> int:
    x = case.arrays["x"]
    return {"row": case.scalars.get("cols", x.shape[-1]), "col": x.shape[0], "mid": x.shape[1]}[
        r.params["axis"]
    ]


def _reduce_over(r: Rendered, case: Case, op: str, keep: int, *, last: bool = False) -> np.ndarray:
    """``op`` over the first ``keep`` reduced elements, with the kernel's start values (what an
    empty reduction leaves) and its division by the full length for the mean."""
    axis = {"row": 1, "col": 0, "mid": 1}[r.params["axis"]]
    x = case.arrays["x"].astype(np.float64)
    if "ld" in case.scalars:
        x = x[:, : case.scalars["cols"]]
    full = x.shape[axis]
    x = np.take(x, range(keep), axis=axis)
    empty = keep == 0
    if op in ("sum", "mean", "sumsq", "norm2"):
        s = (x * x if op in ("sumsq", "norm2") else x).sum(axis=axis)
        v = s / full if op == "mean" else np.sqrt(s) if op == "norm2" else s
        if op == "mean" and not all(sem.dyadic(t, full) for t in s.reshape(-1)):
            raise sem.NotExact("a mean is not exact")
    elif op in ("max", "min", "absmax"):
        base = np.abs(x) if op == "absmax" else x
        start = {"max": -np.inf, "min": np.inf, "absmax": 0.0}[op]
        v = (np.full(base.sum(axis=axis).shape, start) if empty
             else base.max(axis=axis) if op != "min" else base.min(axis=axis))  # fmt: skip
        if op == "absmax" and not empty:
            v = np.maximum(v, 0.0)
    else:
        if empty:
            return typed(r, case, np.full(x.sum(axis=axis).shape, -1 if last else ARG_NONE))
        pick = np.argmax if op == "argmax" else np.argmin
        if last:  # the last extreme index: the first of the reversed axis
            flipped = np.flip(x, axis=axis)
            v = keep - 1 - pick(flipped, axis=axis)
        else:
            v = pick(x, axis=axis)
        return typed(r, case, v)
    if op == "norm2" and not np.array_equal(v * v, s):
        raise sem.NotExact("the norm is not exact")
    return sem.exact_in(v, dtype_of(r, case.output))


def _red_tail(multiple: dict[str, int]) -> Model:
    def model(r: Rendered, case: Case) -> np.ndarray | None:
        n = _reduce_length(r, case)
        return _reduce_over(r, case, r.params["op"], n - n % multiple[r.params["axis"]])

    return model


def _red_operator(r: Rendered, case: Case) -> np.ndarray | None:
    op = swapped_reduce_op(r.params["op"])
    if op in ("mean", "norm2"):  # a rounded mean or root makes no exact question
        return sem.expected(with_params(r, case, op=op), case)
    return _reduce_over(r, case, op, _reduce_length(r, case))


def _red_identity0(r: Rendered, case: Case) -> np.ndarray | None:
    want = sem.expected(r, case).astype(np.float64)
    op = r.params["op"]
    if op == "max":
        return typed(r, case, np.maximum(want, 0.0))
    if op == "min":
        return typed(r, case, np.minimum(want, 0.0))
    return None


def _red_signed(r: Rendered, case: Case) -> np.ndarray | None:
    axis = {"row": 1, "col": 0, "mid": 1}[r.params["axis"]]
    x = case.arrays["x"].astype(np.float64)
    if "ld" in case.scalars:
        x = x[:, : case.scalars["cols"]]
    top = np.abs(x).max(axis=axis, keepdims=True)
    pos = ((x == top) & (top > 0)).any(axis=axis)
    neg = ((x == -top) & (top > 0)).any(axis=axis)
    if (pos & neg).any():  # +m and -m both present: the order of the tree decides
        return None
    return typed(r, case, np.where(neg, -top.squeeze(axis), top.squeeze(axis)))


def _red_last_index(r: Rendered, case: Case) -> np.ndarray:
    return _reduce_over(r, case, r.params["op"], _reduce_length(r, case), last=True)


def _red_narrow(r: Rendered, case: Case) -> np.ndarray | None:
    """Partials kept in a narrower type: the same result while every partial is exact there
    (small integers are, in half precision up to 2048)."""
    x = case.arrays["x"].astype(np.float64)
    if r.params["op"] not in ("sum", "mean") or np.abs(x).sum() >= 2048:
        return None
    return sem.expected(r, case)


# ---------------------------------------------------------------- scan
def _scan_tail(r: Rendered, case: Case) -> np.ndarray:
    out, want = initial(case), sem.expected(r, case)
    n = want.shape[-1]
    keep = n - n % 32
    out[..., :keep] = want[..., :keep]
    return out


def _scan_flip(r: Rendered, case: Case) -> np.ndarray:
    kind = "exclusive" if r.params["kind"] == "inclusive" else "inclusive"
    return sem.expected(with_params(r, case, kind=kind), case)


def _scan_no_heads(r: Rendered, case: Case) -> np.ndarray:
    arrays = {
        k: (np.zeros_like(v) if k not in ("x", case.output) else v) for k, v in case.arrays.items()
    }
    return sem.expected(r, Case(arrays, case.scalars, case.output))


def _scan_tile_restart(tile: int) -> Model:
    def model(r: Rendered, case: Case) -> np.ndarray | None:
        return sem.expected(r, case) if case.arrays["x"].shape[-1] <= tile else None

    return model


def _scan_narrow(r: Rendered, case: Case) -> np.ndarray | None:
    if r.params["op"] != "add" or np.abs(case.arrays["x"].astype(np.float64)).sum() >= 2048:
        return None
    return sem.expected(r, case)


# ---------------------------------------------------------------- stencil
def _st_tail(r: Rendered, case: Case) -> np.ndarray:
    out, want = initial(case), sem.expected(r, case)
    n = want.shape[-1]
    keep = n - n % 32
    out[..., :keep] = want[..., :keep]
    return out


def _st_boundary(r: Rendered, case: Case) -> np.ndarray:
    return sem.expected(with_params(r, case, boundary=wrong_boundary(r.params["boundary"])), case)


def _st_operator(r: Rendered, case: Case) -> np.ndarray:
    w = list(r.params["weights"])
    w[0] = -w[0]
    return sem.expected(with_params(r, case, weights=w), case)


def _st_precision(r: Rendered, case: Case) -> np.ndarray | None:
    """Sums rounded to a narrower type after every tap: the same while every partial is exact."""
    narrow = "float32" if r.language == "cuda_python" or r.params["dtype"] == "f64" else "float16"
    x = case.arrays["x"].astype(np.float64)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    rows, cols = x2.shape
    y = np.zeros(x2.shape)
    t = np.dtype(narrow).type
    for i in range(rows):
        for j in range(cols):
            acc = t(0)
            for a, b, w in sem.stencil_taps(r.params):
                ri = sem.boundary_index(i + a, rows, r.params["boundary"])
                ci = sem.boundary_index(j + b, cols, r.params["boundary"])
                acc = t(float(acc) + (0.0 if ri is None or ci is None else w * x2[ri, ci]))
            y[i, j] = float(acc)
    return typed(r, case, y.reshape(x.shape))


_RED_TAIL = {"row": 32, "col": 8, "mid": 8}
MODELS: dict[tuple[str, str], Model] = {
    ("elementwise", "tail"): _ew_tail,
    ("elementwise", "operator"): _ew_operator,
    ("elementwise", "axis"): _ew_axis,
    ("elementwise", "last-row"): _ew_last_row,
    ("elementwise", "precision"): lambda r, c: _ew_precision(
        "float32" if r.params["dtype"] == "f64" else "float16"
    )(r, c),
    ("py-elementwise", "tail"): _ew_tail,
    ("py-elementwise", "operator"): _ew_operator,
    ("py-elementwise", "axis"): _ew_axis,
    ("py-elementwise", "last-row"): _ew_last_row,
    ("py-elementwise", "precision"): _ew_precision("float32"),
    ("reduce-axis", "tail"): _red_tail(_RED_TAIL),
    ("reduce-axis", "operator"): _red_operator,
    ("reduce-axis", "identity0"): _red_identity0,
    ("reduce-axis", "signed"): _red_signed,
    ("reduce-axis", "last-index"): _red_last_index,
    ("reduce-axis", "narrow"): _red_narrow,
    ("py-reduce-axis", "tail"): _red_tail(_RED_TAIL),
    ("py-reduce-axis", "operator"): _red_operator,
    ("py-reduce-axis", "identity0"): _red_identity0,
    ("py-reduce-axis", "signed"): _red_signed,
    ("py-reduce-axis", "last-index"): _red_last_index,
    ("py-reduce-axis", "narrow"): _red_narrow,
    ("scan", "tail"): _scan_tail,
    ("scan", "operator"): _scan_flip,
    ("scan", "boundary"): _scan_tile_restart(1024),
    ("scan", "narrow"): _scan_narrow,
    ("py-scan", "tail"): _scan_tail,
    ("py-scan", "operator"): _scan_flip,
    ("py-scan", "boundary"): _scan_no_heads,
    ("py-scan", "tile-restart"): _scan_tile_restart(128),
    ("stencil", "tail"): _st_tail,
    ("stencil", "boundary"): _st_boundary,
    ("stencil", "operator"): _st_operator,
    ("stencil", "precision"): _st_precision,
    ("py-stencil", "tail"): _st_tail,
    ("py-stencil", "boundary"): _st_boundary,
    ("py-stencil", "operator"): _st_operator,
    ("py-stencil", "precision"): _st_precision,
}
MODELS.update(mutants_moves.MODELS)


def modelled(family: str, name: str) -> bool:
    return (family, name) in MODELS or (family, name) in mutants_moves.DESCRIBED


def mutant_output(r: Rendered, variant: Variant, case: Case) -> np.ndarray | None:
    """What ``variant`` writes to ``case.output``; None when it is not determined or has no
    model (the question generator then skips it)."""
    if not variant.deterministic:
        return None
    key = (r.family, variant.name)
    try:
        if key in mutants_moves.DESCRIBED:
            return mutants_moves.DESCRIBED[key](r, case, variant)
        model = MODELS.get(key)
        return None if model is None else model(r, case)
    except sem.NotExact:
        return None


__all__ = ["MODELS", "modelled", "mutant_output"]
