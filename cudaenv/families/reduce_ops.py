"""What the reduction families share: the operators, their wrong twins, the input kinds the
tests draw for each operator, and the tolerance rule (one place, so the C++ and the numba
variants state and check the same thing)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    key: str
    kind: str  # value | extreme | arg
    what: str  # for prompts: "the sum of"
    swapped: str  # the wrong operator of the "operator" mutant
    swap_note: str
    kinds: tuple[str, ...]  # input kinds the tests use (the first is the default)


OPS: dict[str, Op] = {
    o.key: o
    for o in (
        Op("sum", "value", "the sum", "mean", "divides by the count", ("uniform", "scaled", "positive")),
        Op("mean", "value", "the mean (the sum divided by the count)", "sum", "forgets to divide by the count", ("uniform", "scaled", "positive")),
        Op("norm2", "value", "the Euclidean norm (the square root of the sum of squares)", "sumsq", "forgets the square root", ("uniform", "scaled", "negative")),
        Op("max", "extreme", "the largest element", "min", "takes the minimum", ("uniform", "negative", "ties")),
        Op("min", "extreme", "the smallest element", "max", "takes the maximum", ("uniform", "positive", "ties")),
        Op("absmax", "extreme", "the largest absolute value `|x|`", "max", "forgets the absolute value", ("uniform", "negative", "ties")),
        Op("argmax", "arg", "the index of the largest element (the smallest such index on ties)", "argmin", "takes the minimum", ("uniform", "ties", "negative")),
        Op("argmin", "arg", "the index of the smallest element (the smallest such index on ties)", "argmax", "takes the maximum", ("uniform", "ties", "positive")),
    )
}  # fmt: skip

# Value ranges of each input kind (the tests and the benchmark draw uniformly from them; "ties"
# draws integers -3..3, so extreme values repeat).
KIND_RANGE: dict[str, tuple[float, float]] = {
    "uniform": (-1.0, 1.0),
    "scaled": (-100.0, 100.0),
    "negative": (-9.0, -1.0),
    "positive": (1.0, 9.0),
    "ties": (-3.0, 3.0),
}
KIND_CODE = {k: i for i, k in enumerate(KIND_RANGE)}

#: relative tolerance of value results, by accumulation type: |got - exact| <= R * S, with
#: S = sum of |x| over the reduced elements (the mean: S / count; the norm: the norm itself)
RTOL = {"float": 2e-5, "double": 1e-12}
ATOL = 1e-30
KIND_TEXT = {
    "uniform": "uniform in [-1, 1]",
    "scaled": "uniform in [-100, 100]",
    "negative": "all negative (in [-9, -1])",
    "positive": "all positive (in [1, 9])",
    "ties": "small integers (-3..3), so extreme values repeat",
}


def num(v: float) -> str:
    """A tolerance as prompts and harnesses write it: ``2e-5``, ``1e-12``, ``0.5``."""
    text = f"{v:g}"
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}e{int(exp)}"
    return text


def tolerance_text(acc: str, op: Op) -> str:
    """The prompt's sentence on how results are checked."""
    if op.kind == "extreme":
        return "Checking is exact: the result must equal the chosen element bit for bit."
    if op.kind == "arg":
        return "Checking is exact: the index must be that of the first extreme element."
    scale = {
        "sum": "`S = sum |x|` over the reduced elements",
        "mean": "`S = (sum |x|) / count` over the reduced elements",
        "norm2": "`S` the exact norm",
    }[op.key]
    why = (
        "any summation order with a float accumulator passes (per-thread partials combined "
        "as a tree, atomics over block partials); accumulating in half precision does not"
        if acc == "float"
        else "a double accumulator in any order passes; accumulating in float does not"
    )
    return (
        f"Checking: every result must satisfy `|out - exact| <= {num(RTOL[acc])} * S`, where "
        f"`exact` is computed in double on the CPU and {scale}: {why}."
    )


def difficulty(axis: str, op: Op, dtype: str, pitched: bool) -> str:
    score = {"row": 0, "col": 1, "mid": 1}[axis] + (op.kind == "arg") + (dtype == "f16")
    score += 0.5 * pitched
    return "easy" if score < 1 else "medium" if score < 2 else "hard"


DT = {"f32": "fp32", "f64": "fp64", "f16": "fp16"}
MIB128 = 128 << 20


def work(op: Op, dtype: str, acc: str, sizes: tuple[int, int, int], axis: str, calls: int,
         in_size: int, out_size: int, *, shifted: bool = True) -> dict:  # fmt: skip
    """``metadata.work`` of ``calls`` reductions of a (batch, rows, cols) input (AUTHORING.md's
    counting: every call reads its input and writes its output once; with ``shifted`` inputs
    a later call re-reads mostly what the previous one read: that part is ``reuse_bytes``)."""
    b, r, c = sizes
    n, n_out = b * r * c, (b * r if axis == "row" else b * c)
    flops = {"sum": n, "mean": n + n_out, "norm2": 2 * n + n_out}.get(op.key, 0)
    per_in = n * in_size
    return {
        "flops": calls * flops,
        "bytes": calls * (per_in + n_out * out_size),
        "dtype": ("fp64" if acc == "double" else "fp32") if flops else DT[dtype],
        "reuse_bytes": (calls - 1) * per_in if shifted and per_in <= MIB128 else 0,
    }
