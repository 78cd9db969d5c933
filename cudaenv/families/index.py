"""indexing (cuda_cpp): gather rows by index, scatter-add rows by index (atomics, optional
weights), and histograms (bins of width 1/4, counts or float weights, values outside the range
dropped or clamped); uniform or hot (half the traffic on one row or bin) distributions."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Listed, Mutant, Params, Parts
from cudaenv.families.checks import Cases, tests
from cudaenv.families.index_src import baseline, fn, hist_type, reference, signature
from cudaenv.families.parts import cpp_parts
from cudaenv.families.runners import Arg, Io

TYPES = {**cpp.CTYPES, "i32": cpp.INT32}
CALLS = 3  # timed calls, each on its own inputs and output
ROW_CASES = [(0, 5), (1, 1), (5, 3), (33, 7), (1000, 50), (4099, 1000), (100003, 17)]
HIST_CASES = [(0,), (1,), (5,), (33,), (1000,), (100003,), (1 << 20,)]
PERF_N = 1 << 22  # elements moved per timed call: a histogram's values, n * width for rows
PERF_ROWS = {"gather": 16384, "scatter_add": 4096}  # the benchmark's table / output rows


def _space() -> list[Params]:
    out: list[Params] = []
    for dist in ("uniform", "hot"):
        for dt in ("f32", "f64", "f16", "i32"):
            for w in (1, 3, 64, 129):
                out.append(
                    {
                        "op": "gather",
                        "dtype": dt,
                        "width": w,
                        "weighted": False,
                        "policy": "none",
                        "dist": dist,
                    }
                )
        for dt in ("f32", "f64", "i32"):
            for w in (1, 4, 33):
                for wt in (False, True) if dt != "i32" else (False,):
                    out.append(
                        {
                            "op": "scatter_add",
                            "dtype": dt,
                            "width": w,
                            "weighted": wt,
                            "policy": "none",
                            "dist": dist,
                        }
                    )
        for b in (16, 100, 256, 1000, 4096):
            for wt in (False, True):
                for pol in ("drop", "clamp"):
                    out.append(
                        {
                            "op": "histogram",
                            "dtype": "f32",
                            "width": b,
                            "weighted": wt,
                            "policy": pol,
                            "dist": dist,
                        }
                    )
    return out  # fmt: skip


def label(p: Params) -> str:
    return f"{fn(p).replace('_', '-')}-{p['dtype']}-{p['dist']}"


SPACE = Listed(_space, label)


def io(p: Params) -> Io:
    dt = p["dtype"]
    w = [Arg("w", "f32" if p["op"] == "histogram" else dt)] if p["weighted"] else []
    wc = "@w@, " if p["weighted"] else ""
    if p["op"] == "histogram":
        out = Arg("hist", "f32" if p["weighted"] else "i32", "out")
        return Io(fn(p), (Arg("x", "f32"), *w, out), ("n",), f"{fn(p)}(@x@, {wc}@hist@, n)")
    if p["op"] == "gather":
        args = (Arg("table", dt), Arg("idx", "i32"), Arg("out", dt, "out"))
        return Io(fn(p), args, ("n", "rows"), f"{fn(p)}(@table@, @idx@, @out@, n, rows)")
    args = (Arg("x", dt), Arg("idx", "i32"), *w, Arg("out", dt, "inout"))
    return Io(fn(p), args, ("n", "rows"), f"{fn(p)}(@x@, @idx@, {wc}@out@, n, rows)")


def perf_sizes(p: Params) -> dict[str, int]:
    if p["op"] == "histogram":
        return {"n": PERF_N}
    return {"n": PERF_N // p["width"], "rows": PERF_ROWS[p["op"]]}


def cases(p: Params) -> Cases:
    kinds = ("uniform", "hot")
    if p["op"] == "histogram":
        found = tests(HIST_CASES, ("n",), kinds)
    else:
        found = tests(ROW_CASES, ("n", "rows"), kinds)
    return Cases(found, perf_sizes(p), CALLS, p["dist"])


def work(p: Params, ct: cpp.CType) -> dict:
    """``metadata.work``: per timed call, the values read and written once (a gather reads the
    rows it picks; a scatter-add reads and writes its whole output)."""
    d, op, sizes = p["width"], p["op"], perf_sizes(p)
    n = sizes["n"]
    if op == "histogram":
        return {"flops": CALLS * n if p["weighted"] else 0,
                "bytes": CALLS * (n * (8 if p["weighted"] else 4) + d * 4),
                "dtype": "fp32" if p["weighted"] else "int32"}  # fmt: skip
    rows = sizes["rows"]
    moved = n * d * ct.size * 2 + n * 4
    if op == "scatter_add":
        weights = n * ct.size if p["weighted"] else 0
        moved = n * d * ct.size + n * 4 + weights + 2 * rows * d * ct.size
    flops = n * d * (2 if p["weighted"] else 1) if op == "scatter_add" and ct.key != "i32" else 0
    dtype = {"f32": "fp32", "f64": "fp64", "f16": "fp16", "i32": "int32"}[ct.key]
    return {"flops": CALLS * flops, "bytes": CALLS * moved, "dtype": dtype}


def prompt(p: Params, ct: cpp.CType) -> str:
    d, op = p["width"], p["op"]
    header = f"include/{fn(p)}.h"
    hot = ("half of the indices are 0 and the rest uniform in `[0, rows)`" if p["dist"] == "hot"
           else "indices uniform in `[0, rows)`")  # fmt: skip
    if op == "gather":
        what = (f"`table` is a `rows x {d}` row-major matrix, `idx` holds `n` row indices in "
                f"`[0, rows)`; write `out[i][j] = table[idx[i]][j]` for `i < n`, `j < {d}` "
                f"(`out` is `n x {d}`)")  # fmt: skip
        check = "Checking is exact (values are only moved)."
        perf = f"n = {PERF_N // d}, rows = {PERF_ROWS[op]}"
    elif op == "scatter_add":
        term = "w[i] * x[i][j]" if p["weighted"] else "x[i][j]"
        what = (f"`x` is `n x {d}` row-major, `idx` holds `n` row indices in `[0, rows)`"
                f"{', `w` holds `n` weights' if p['weighted'] else ''}; add `{term}` to "
                f"`out[idx[i]][j]` for every `i < n`, `j < {d}` (`out` is `rows x {d}` and keeps "
                "its previous contents otherwise; several `i` may share a row)")  # fmt: skip
        check = ("Checking is exact (integers)." if ct.key == "i32" else
                 "Checking: `|out - exact| <= 2 (m + 1) u (|out0| + sum |terms|)` per element, for the "
                 "`m` terms added to it in any order (`u` the unit roundoff of the element type, "
                 "`exact` in double on the CPU).")  # fmt: skip
        perf = f"n = {PERF_N // d}, rows = {PERF_ROWS[op]}"
    else:
        pol = ("values below 0 go to bin 0 and values at or above the range to the last bin"
               if p["policy"] == "clamp" else "values outside the range are ignored")  # fmt: skip
        what = (f"`x` holds `n` floats{', `w` holds `n` float weights' if p['weighted'] else ''}; "
                f"bin `b` covers `[b/4, (b+1)/4)` for `0 <= b < {d}` (the bin of `v` is "
                f"`floor(4 * v)`, exact in float); {pol}. Write into `hist` ({d} "
                f"`{hist_type(p)}`s, previous contents garbage) "
                f"{'the sum of the weights' if p['weighted'] else 'the number'} of the values in each bin")  # fmt: skip
        check = ("Checking: `|hist[b] - exact| <= 2 (m + 1) u sum |w|` over the `m` values in the bin "
                 "(`u = 2^-24`, any order of float additions)." if p["weighted"]
                 else "Checking is exact.")  # fmt: skip
        perf = f"n = {PERF_N}"
        hot = (
            "half of the values in bin 3"
            if p["dist"] == "hot"
            else "values spread over the range and a little beyond it"
        )
    return f"""Implement {op.replace("_", "-")} on the GPU. The interface is declared in `{header}`:

```c++
{signature(p, ct)};
```

- {what}. Element type: {ct.label if op != "histogram" else "float"}; all pointers are device
  pointers to non-overlapping arrays. Do not write outside the output and do not modify the
  inputs.
- Sizes: `n >= 0` (nothing to do when 0{", but `hist` must still be written" if op == "histogram" else ""}), arrays under 2^31 elements. The tests
  cover single elements, sizes that are not multiples of any block size, repeated indices and
  about a million elements. The benchmark times {CALLS} calls with {perf}, {hot}, each with its
  own inputs.

{check}

{cpp.closing(header)}
"""


class Indexing(Family):
    name = "indexing"
    slug = "idx"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = TYPES[p["dtype"]]
        op = p["op"]
        return cpp_parts(self.name, p, task_id, header=f"{fn(p)}.h", declaration=signature(p, ct),
                         comment=f"{op} (see the task statement).", includes=[ct.include],
                         io=io(p), module="indexing", cases=cases(p), prompt=prompt(p, ct),
                         reference=reference(p, ct), baseline=baseline(p, ct),
                         difficulty="easy" if op == "gather" else ("hard" if op == "histogram" and p["dist"] == "hot" else "medium"),
                         tags=["indexing", op.replace("_", "-"), p["dtype"], p["dist"]] + (["atomics"] if op != "gather" else []),
                         work=work(p, ct))  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        ct = TYPES[p["dtype"]]

        def m(name: str, kind: str, why: str, bug: str, det: bool = True) -> Mutant:
            return Mutant(name, kind, why, {"solution.cu": reference(p, ct, bug)}, det)  # type: ignore[arg-type]

        out = [m("tail", "tail", "skips the last n mod 32 inputs", "tail")]
        if p["op"] == "gather":
            out += [
                m(
                    "operator",
                    "operator",
                    "reads row i (wrapped) instead of row idx[i]",
                    "operator",
                ),
                m("boundary", "boundary", "skips the last element of every row", "boundary"),
            ]
        elif p["op"] == "scatter_add":
            out.append(
                m("operator", "operator", "overwrites the row instead of adding to it", "operator")
            )
            out.append(
                m("no-weights", "operator", "ignores the weights", "no-weights")
                if p["weighted"]
                else m("boundary", "boundary", "drops what goes to row 0", "boundary")
            )
            out.append(
                m("no-sync", "sync", "adds without atomics (lost updates)", "no-sync", False)
            )
        else:
            out += [
                m(
                    "operator",
                    "operator",
                    "rounds 4v to the nearest bin instead of flooring",
                    "operator",
                ),
                m("boundary", "boundary", "swaps the out-of-range policy", "boundary"),
                m("no-sync", "sync", "no barrier after clearing the shared bins", "no-sync", False),
            ]
        return out  # fmt: skip
