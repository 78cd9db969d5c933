"""The scan family's one definition, shared by its C++ and Python renderings: the parameter
space (inclusive or exclusive, add/max/min, float/double/int, one long array or every row,
plain or segmented), identities, input kinds, the tolerance rule, prompt sentences, the test
cases and the benchmark (the reference semantics are ``refs/scan.py``)."""

from __future__ import annotations

from cudaenv.families.base import Listed, Params
from cudaenv.families.checks import Cases, tests

KINDS = ("inclusive", "exclusive")
OPS = ("add", "max", "min")
LAYOUTS = ("1d", "rows")
SHAPES = {
    "1d": [(1, 0), (1, 1), (1, 2), (1, 31), (1, 32), (1, 33), (1, 1000), (1, 1023), (1, 1025),
           (1, 4097), (1, 100003), (1, 1 << 20), (1, 3000017)],
    "rows": [(0, 5), (1, 1), (3, 5), (7, 32), (5, 33), (64, 1000), (1000, 3), (3, 4099),
             (2, 100003), (300, 1025), (20000, 7)],
}  # fmt: skip
# Python: small shapes on numba-cuda's simulator, the rest on a GPU
SIM_SHAPES = {"1d": [(1, 0), (1, 1), (1, 5), (1, 130), (1, 300)],
              "rows": [(0, 5), (1, 1), (3, 5), (2, 33), (4, 150)]}  # fmt: skip
GPU_SHAPES = {"1d": [(1, 1023), (1, 100003), (1, 1 << 20)],
              "rows": [(64, 1000), (3, 4099), (1000, 3)]}  # fmt: skip
PERF = {"1d": (1, 1 << 22), "rows": (2048, 2048)}
SIM_PERF = {"1d": (1, 300), "rows": (3, 150)}
CALLS = 3  # timed calls, each on its own input and output
DTYPES = ("f32", "f64", "i32")
SIZES = ("rows", "cols")  # a 1d scan: one row
RTOL = {"float": 2e-5, "double": 1e-12}
#: input kinds (refs/scan.py): uniform (float [-1, 1], int [-100, 100]); all negative; all
#: positive. The cases cycle through three of them by operator:
KIND_CASES = {"add": ("uniform", "uniform", "positive"), "max": ("uniform", "negative", "uniform"),
              "min": ("uniform", "positive", "uniform")}  # fmt: skip


def _points() -> list[Params]:
    return [
        {"kind": k, "op": o, "dtype": d, "layout": lay, "segmented": seg}
        for k in KINDS
        for o in OPS
        for d in DTYPES
        for lay in LAYOUTS
        for seg in (False, True)
    ]


def label(p: Params) -> str:
    seg = "-seg" if p["segmented"] else ""
    return f"{p['layout']}-{p['kind'][:4]}-{p['op']}-{p['dtype']}{seg}"


#: the family's parameter space (both renderings: all of it)
SPACE = Listed(_points, label)
SIZE = {"f32": 4, "f64": 8, "i32": 4}


def work(p: Params) -> dict:
    """``metadata.work``: every timed call reads ``x`` (and ``flags``) and writes ``out``; float
    additions count one flop per element."""
    rows, cols = PERF[p["layout"]]
    n = rows * cols
    size = SIZE[p["dtype"]]
    float_add = p["op"] == "add" and p["dtype"] != "i32"
    return {"flops": CALLS * n if float_add else 0,
            "bytes": CALLS * n * (2 * size + (4 if p["segmented"] else 0)),
            "dtype": {"f32": "fp32", "f64": "fp64", "i32": "int32"}[p["dtype"]]}  # fmt: skip


def cpp_cases(p: Params) -> Cases:
    kinds = KIND_CASES[p["op"]]
    perf = dict(zip(SIZES, PERF[p["layout"]], strict=True))
    return Cases(tests(SHAPES[p["layout"]], SIZES, kinds), perf, CALLS, "uniform")


def py_cases(p: Params) -> Cases:
    kinds, lay = KIND_CASES[p["op"]], p["layout"]
    return Cases(
        tests(SIM_SHAPES[lay], SIZES, kinds, host=(1, 2)),
        dict(zip(SIZES, PERF[lay], strict=True)),
        CALLS,
        "uniform",
        gpu_tests=tests(GPU_SHAPES[lay], SIZES, kinds, first=len(SIM_SHAPES[lay])),
        sim_perf=dict(zip(SIZES, SIM_PERF[lay], strict=True)),
    )


def fn(p: Params) -> str:
    return (
        ("row_" if p["layout"] == "rows" else "")
        + f"scan_{p['kind']}_{p['op']}"
        + ("_seg" if p["segmented"] else "")
    )


def identity_text(op: str, integer: bool) -> str:
    return {"add": "0", "max": "INT_MIN" if integer else "-infinity",
            "min": "INT_MAX" if integer else "+infinity"}[op]  # fmt: skip


def what(p: Params, integer: bool) -> str:
    sym = {"add": "+", "max": "max", "min": "min"}[p["op"]]
    seq = "the row" if p["layout"] == "rows" else "the array"
    seg = (
        " The scan restarts at every segment head: element `i` starts a segment when "
        "`flags[i] != 0` (the first element of "
        + seq
        + " always does), and each output combines only the elements of its own segment."
        if p["segmented"]
        else ""
    )
    if p["kind"] == "inclusive":
        form = (
            f"`out[i] = x[s] {sym} ... {sym} x[i]`" if sym == "+" else f"`out[i] = {sym}(x[s..i])`"
        )
    else:
        form = (
            f"`out[i] = x[s] {sym} ... {sym} x[i-1]`"
            if sym == "+"
            else f"`out[i] = {sym}(x[s..i-1])`"
        ) + f", and `{identity_text(p['op'], integer)}` where that is empty"
    return (
        f"an {p['kind']} scan with `{p['op']}`: {form}, where `s` is the first element of "
        f"{seq}{' or of the segment' if p['segmented'] else ''}.{seg}"
    )


def tolerance_text(p: Params, acc: str, integer: bool) -> str:
    if integer or p["op"] != "add":
        return (
            "Checking is exact (integer sums do not overflow: the values are small)."
            if integer
            else ("Checking is exact: a running maximum or minimum only picks elements.")
        )
    r = f"{RTOL[acc]:g}".replace("e-0", "e-")
    return (
        f"Checking: `|out[i] - exact| <= {r} * sum |x|` over the elements combined into "
        f"`out[i]` (`exact` in double on the CPU): any order of {acc} additions passes "
        "(per-thread partials, a tree within the block, a prefix of block sums); accumulating in "
        "a narrower type does not."
    )


def difficulty(p: Params) -> str:
    score = (p["layout"] == "1d") + p["segmented"] + (p["kind"] == "exclusive")
    return "easy" if score == 0 else "medium" if score <= 2 else "hard"
