"""The reduce-axis family's one definition, shared by its C++ and Python renderings: the
parameter space, the operators and their wrong twins, the input kinds the tests draw for each
operator, the tolerance rule, the test cases and the benchmark (the reference semantics are
``refs/reduce_axis.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.families.base import Listed, Params
from cudaenv.families.checks import Cases, Test


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

AXES = ("row", "col", "mid")
DTYPES = ("f32", "f64", "f16")


def _points() -> list[Params]:
    out = []
    for axis in AXES:
        for op in OPS:
            for dtype in DTYPES:
                for pitched in (False, True) if axis != "mid" else (False,):
                    out.append({"axis": axis, "op": op, "dtype": dtype, "pitched": pitched})
    return out


def label(p: Params) -> str:
    return f"{p['axis']}-{p['op']}-{p['dtype']}{'-pitched' if p['pitched'] else ''}"


#: the family's parameter space (the Python rendering: float and double, no pitch)
SPACE = Listed(_points, label)

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


# --- cases ------------------------------------------------------------------------------
SIZES = ("batch", "rows", "cols", "pad")
# C++ test shapes (batch, rows, cols): sizes not multiples of 32 or of a block, single
# elements, very tall and very wide, and a few with about a million elements
SHAPES = {
    "row": [(1, 0, 5), (1, 1, 1), (1, 1, 33), (1, 3, 5), (1, 7, 32), (1, 5, 1000), (1, 64, 257),
            (1, 1000, 1), (1, 20000, 7), (1, 3, 100003), (1, 300, 4099), (1, 2, 1 << 20)],
    "col": [(1, 5, 0), (1, 1, 1), (1, 33, 1), (1, 5, 3), (1, 32, 7), (1, 1000, 5), (1, 257, 64),
            (1, 1, 1000), (1, 7, 20000), (1, 100003, 3), (1, 4099, 300), (1, 1 << 20, 2)],
    "mid": [(0, 3, 4), (1, 1, 1), (2, 33, 5), (3, 7, 129), (64, 100, 3), (5, 1000, 65),
            (1, 9, 1), (17, 257, 257), (4, 65536, 3)],
}  # fmt: skip
# Python: small shapes on numba-cuda's simulator, the rest on a GPU
SIM_SHAPES = {
    "row": [(1, 0, 5), (1, 1, 1), (1, 3, 5), (1, 2, 33), (1, 4, 70)],
    "col": [(1, 5, 0), (1, 1, 1), (1, 5, 3), (1, 33, 2), (1, 70, 4)],
    "mid": [(0, 3, 4), (1, 1, 1), (2, 5, 3), (2, 33, 2), (3, 7, 5)],
}
GPU_SHAPES = {
    "row": [(1, 1000, 3), (1, 64, 257), (1, 300, 4099), (1, 3, 100003), (1, 2, 1 << 20)],
    "col": [(1, 3, 1000), (1, 257, 64), (1, 4099, 300), (1, 100003, 3), (1, 1 << 20, 2)],
    "mid": [(64, 100, 3), (5, 1000, 65), (17, 257, 257), (4, 65536, 3)],
}
SPECIAL = {"row": (1, 129, 70), "col": (1, 129, 70), "mid": (3, 129, 70)}  # C++
SIM_SPECIAL = {"row": (1, 3, 37), "col": (1, 37, 3), "mid": (2, 37, 3)}  # Python
PERF = {"row": (1, 8192, 2048), "col": (1, 2048, 8192), "mid": (64, 256, 1024)}
SIM_PERF = {"row": (1, 3, 37), "col": (1, 37, 3), "mid": (2, 9, 5)}
CALLS = 5  # timed calls, each on the shared input shifted by a row
PERF_PAD = 64  # the benchmark's row padding when pitched


def _sizes(shape: tuple[int, int, int], pad: int) -> dict[str, int]:
    return dict(zip(SIZES, (*shape, pad), strict=True))


def cpp_cases(p: Params) -> Cases:
    """The C++ rendering's cases: every shape (pitched: a padding that varies), then each
    special input kind once more on a mid-size shape."""
    kinds = OPS[p["op"]].kinds
    pads = [(i * 7) % 37 + 1 if p["pitched"] else 0 for i in range(len(SHAPES[p["axis"]]))]
    tests: list[Test] = [
        (f"case{i}", _sizes(s, pads[i]), kinds[i % len(kinds)], False)
        for i, s in enumerate(SHAPES[p["axis"]])
    ]
    pad = 5 if p["pitched"] else 0
    tests += [(k, _sizes(SPECIAL[p["axis"]], pad), k, False) for k in kinds[1:]]
    perf = _sizes(PERF[p["axis"]], PERF_PAD if p["pitched"] else 0)
    return Cases(tests, perf, CALLS, kinds[0])


def py_cases(p: Params) -> Cases:
    """The Python rendering's cases: small ones (each special kind once more), called with
    host arrays too for the second and third; on a GPU the large shapes besides."""
    kinds = OPS[p["op"]].kinds
    sim = SIM_SHAPES[p["axis"]]
    tests: list[Test] = [
        (f"case{i}", _sizes(s, 0), kinds[i % len(kinds)], 1 <= i <= 2) for i, s in enumerate(sim)
    ]
    tests += [(k, _sizes(SIM_SPECIAL[p["axis"]], 0), k, False) for k in kinds[1:]]
    gpu = [
        (f"case{len(sim) + i}", _sizes(s, 0), kinds[i % len(kinds)], False)
        for i, s in enumerate(GPU_SHAPES[p["axis"]])
    ]
    return Cases(tests, _sizes(PERF[p["axis"]], 0), CALLS, kinds[0], gpu_tests=gpu,
                 sim_perf=_sizes(SIM_PERF[p["axis"]], 0))  # fmt: skip
