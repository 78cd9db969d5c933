"""indexing (cuda_cpp): gather rows by index, scatter-add rows by index (atomics, optional
weights), and histograms (bins of width 1/4, counts or float weights, values outside the range
dropped or clamped); uniform or hot (half the traffic on one row or bin) distributions."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families import cpp, cpp_harness
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.index_src import baseline, fn, hist_type, host_ref, reference, signature

TYPES = {**cpp.CTYPES, "i32": cpp.INT32}
CALLS = 5
ROW_CASES = [(0, 5), (1, 1), (5, 3), (33, 7), (1000, 50), (4099, 1000), (100003, 17)]
HIST_CASES = [(0,), (1,), (5,), (33,), (1000,), (100003,), (1 << 20,)]
PERF_ROWS = 65536
HELPERS = """
// Histogram inputs: multiples of 1/32 from -B/64 to about 9B/32 (bins -B/16 .. 9B/8: some out
// of range on both sides, edges exact); hot: half of them in bin 3.
static float draw_x(Rng& rng, int kind, int bins) {
    if (kind == HOT && rng.below(2)) return 0.75f + (float)rng.below(8) / 32.0f;
    return (float)(rng.below(9 * bins) - bins / 2) / 32.0f;
}
"""


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


def harness_spec(p: Params, ct: cpp.CType) -> cpp_harness.Spec:
    d, op = p["width"], p["op"]
    integer = ct.key == "i32"
    gen = "(int)(rng.next() % 201) - 100" if integer else ct.host_store("rng.uni(-1.0, 1.0)")
    shown = "(double)host_h2f({})" if ct.key == "f16" else ""
    kind = 1 if p["dist"] == "hot" else 0
    idx = cpp_harness.Arr(
        "idx", "int", "int", "(size_t)n", "c.kind == HOT && rng.below(2) ? 0 : rng.below(rows)"
    )
    if op == "histogram":
        h = hist_type(p)
        inputs = [cpp_harness.Arr("x", "float", "float", "(size_t)n", f"draw_x(rng, c.kind, {d})")]
        w = ""
        if p["weighted"]:
            inputs.append(
                cpp_harness.Arr("w", "float", "float", "(size_t)n", "(float)rng.uni(-2.0, 2.0)")
            )
            w = "@w@, "
        return cpp_harness.Spec(
            vars=["n"], cases=[(f"case{i}", list(s), i % 2) for i, s in enumerate(HIST_CASES)],
            inputs=inputs, outputs=[cpp_harness.Arr("hist", h, h, f"(size_t){d}")],
            call=f"{fn(p)}(@x@, {w}@hist@, n)", host_call=f"host_hist(@x@, {w}n, @want_hist@, @tol_hist@)",
            perf=[1 << 24], perf_kind=kind, calls=CALLS, kinds=["UNIFORM", "HOT"], helpers=HELPERS,
        )  # fmt: skip
    n_perf = (1 << 24) // d
    if op == "gather":
        inputs = [cpp_harness.Arr("table", ct.host, ct.dev, f"(size_t)rows * {d}", gen), idx]
        return cpp_harness.Spec(
            vars=["n", "rows"], cases=[(f"case{i}", list(s), i % 2) for i, s in enumerate(ROW_CASES)],
            inputs=inputs, outputs=[cpp_harness.Arr("out", ct.host, ct.dev, f"(size_t)n * {d}", shown=shown)],
            call=f"{fn(p)}(@table@, @idx@, @out@, n, rows)",
            host_call="host_gather(@table@, @idx@, n, rows, @want_out@, @tol_out@)",
            perf=[n_perf, PERF_ROWS], perf_kind=kind, calls=CALLS, kinds=["UNIFORM", "HOT"],
        )  # fmt: skip
    inputs = [cpp_harness.Arr("x", ct.host, ct.dev, f"(size_t)n * {d}", gen), idx]
    w = ""
    if p["weighted"]:
        inputs.append(
            cpp_harness.Arr("w", ct.host, ct.dev, "(size_t)n", ct.host_store("rng.uni(-2.0, 2.0)"))
        )
        w = "@w@, "
    out = cpp_harness.Arr("out", ct.host, ct.dev, f"(size_t)rows * {d}", gen, inout=True)
    return cpp_harness.Spec(
        vars=["n", "rows"], cases=[(f"case{i}", list(s), i % 2) for i, s in enumerate(ROW_CASES)],
        inputs=inputs, outputs=[out], call=f"{fn(p)}(@x@, @idx@, {w}@out@, n, rows)",
        host_call=f"host_scatter(@x@, @idx@, {w}@out@, n, rows, @want_out@, @tol_out@)",
        perf=[n_perf, 4096], perf_kind=kind, calls=CALLS, kinds=["UNIFORM", "HOT"],
    )  # fmt: skip


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
        perf = f"n = {(1 << 24) // d}, rows = {PERF_ROWS}"
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
        perf = f"n = {(1 << 24) // d}, rows = 4096"
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
        perf = "n = 16777216"
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

    def space(self) -> list[Params]:
        return _space()

    def draw(self, rng: random.Random) -> Params:
        return rng.choice(_space())

    def check(self, params: Params) -> Params:
        if params not in _space():
            raise SpecError(f"not a {self.name} parameter set: {params}", field="params")
        return params

    def label(self, p: Params) -> str:
        return f"{fn(p).replace('_', '-')}-{p['dtype']}-{p['dist']}"

    def render(self, p: Params, task_id: str) -> Parts:
        ct = TYPES[p["dtype"]]
        spec = harness_spec(p, ct)
        d, op = p["width"], p["op"]
        inc = [ct.include]
        if op == "histogram":
            n = 1 << 24
            work = {"flops": CALLS * n if p["weighted"] else 0,
                    "bytes": CALLS * (n * (8 if p["weighted"] else 4) + d * 4),
                    "dtype": "fp32" if p["weighted"] else "int32"}  # fmt: skip
        else:
            n = (1 << 24) // d
            rows = PERF_ROWS if op == "gather" else 4096
            moved = n * d * ct.size * 2 + n * 4
            if op == "scatter_add":
                moved = (
                    n * d * ct.size
                    + n * 4
                    + (n * ct.size if p["weighted"] else 0)
                    + 2 * rows * d * ct.size
                )
            work = {"flops": CALLS * n * d * (2 if p["weighted"] else 1) if op == "scatter_add" and ct.key != "i32" else 0,
                    "bytes": CALLS * moved,
                    "dtype": {"f32": "fp32", "f64": "fp64", "f16": "fp16", "i32": "int32"}[ct.key]}  # fmt: skip
        return Parts(
            prompt=prompt(p, ct),
            context={f"include/{fn(p)}.h": cpp.header_file(signature(p, ct), f"{op} (see the task statement).", includes=inc)},
            tests={
                "test/test_main.cu": cpp.harness(task_id=task_id, family=self.name, summary=op, header=f"{fn(p)}.h",
                                                 includes=inc, body=cpp_harness.body(spec)),
                "test/host_ref.h": host_ref(p, ct),
            },
            solution={"solution.cu": reference(p, ct)},
            baseline={"solution.cu": baseline(p, ct)},
            difficulty="easy" if op == "gather" else ("hard" if op == "histogram" and p["dist"] == "hot" else "medium"),
            tags=["indexing", op.replace("_", "-"), p["dtype"], p["dist"]] + (["atomics"] if op != "gather" else []),
            work=work,
            forbidden=list(cpp.FORBIDDEN),
            extra_metadata={"bench_sizes": {k: v for k, v in zip(spec.vars, spec.perf, strict=True)} | {"R": CALLS}},
        )  # fmt: skip

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
