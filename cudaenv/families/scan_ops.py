"""What the scan families share: the parameter space (inclusive or exclusive, add/max/min,
float/double/int, one long array or every row, plain or segmented), identities, input kinds,
the tolerance rule and prompt sentences."""

from __future__ import annotations

from cudaenv.families.base import Params

KINDS = ("inclusive", "exclusive")
OPS = ("add", "max", "min")
LAYOUTS = ("1d", "rows")
SHAPES = {
    "1d": [(1, 0), (1, 1), (1, 2), (1, 31), (1, 32), (1, 33), (1, 1000), (1, 1023), (1, 1025),
           (1, 4097), (1, 100003), (1, 1 << 20), (1, 3000017)],
    "rows": [(0, 5), (1, 1), (3, 5), (7, 32), (5, 33), (64, 1000), (1000, 3), (3, 4099),
             (2, 100003), (300, 1025), (20000, 7)],
}  # fmt: skip
PERF = {"1d": (1, 1 << 24), "rows": (4096, 4096)}
RTOL = {"float": 2e-5, "double": 1e-12}
#: input kinds: uniform (float [-1, 1], int [-100, 100]); all negative; all positive
INPUT_KINDS = ("UNIFORM", "NEGATIVE", "POSITIVE")
KIND_CASES = {"add": (0, 0, 2), "max": (0, 1, 0), "min": (0, 2, 0)}


def space(dtypes: tuple[str, ...]) -> list[Params]:
    return [
        {"kind": k, "op": o, "dtype": d, "layout": lay, "segmented": seg}
        for k in KINDS
        for o in OPS
        for d in dtypes
        for lay in LAYOUTS
        for seg in (False, True)
    ]


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
