"""scan (cuda_cpp): inclusive or exclusive prefix scans with add, max or min over float,
double or int, of one long array or of every row of a matrix, plain or segmented by head
flags."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families import cpp, cpp_harness
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.scan_ops import (
    INPUT_KINDS,
    KIND_CASES,
    PERF,
    SHAPES,
    difficulty,
    fn,
    space,
    tolerance_text,
    what,
)
from cudaenv.families.scan_src import baseline, host_ref, reference, signature

DTYPES = ("f32", "f64", "i32")
TYPES = {**cpp.CTYPES, "i32": cpp.INT32}
CALLS = 5
HELPERS = """
// Input kinds: uniform (float in [-1, 1], int in [-100, 100]), all negative, all positive.
static double draw_v(Rng& rng, int kind, bool integer) {
    if (integer) {
        const int lo = kind == POSITIVE ? 1 : -100, hi = kind == NEGATIVE ? -1 : 100;
        return (double)(lo + rng.below(hi - lo + 1));
    }
    if (kind == NEGATIVE) return rng.uni(-9.0, -1.0);
    if (kind == POSITIVE) return rng.uni(1.0, 9.0);
    return rng.uni(-1.0, 1.0);
}
"""


def harness_spec(p: Params, ct: cpp.CType) -> cpp_harness.Spec:
    integer = ct.key == "i32"
    size = "(size_t)rows * cols"
    inputs = [cpp_harness.Arr("x", ct.host, ct.dev, size,
                              f"({ct.host})draw_v(rng, c.kind, {'true' if integer else 'false'})")]  # fmt: skip
    fl = ""
    if p["segmented"]:
        inputs.append(cpp_harness.Arr("flags", "int", "int", size, "rng.below(8) == 0 ? 1 : 0"))
        fl = "@flags@, "
    dims = "rows, cols" if p["layout"] == "rows" else "cols"
    kinds = KIND_CASES[p["op"]]
    return cpp_harness.Spec(
        vars=["rows", "cols"],
        cases=[(f"case{i}", list(s), kinds[i % 3]) for i, s in enumerate(SHAPES[p["layout"]])],
        inputs=inputs,
        outputs=[cpp_harness.Arr("out", ct.host, ct.dev, size)],
        call=f"{fn(p)}(@x@, {fl}@out@, {dims})",
        host_call=f"host_scan(@x@, {fl}rows, cols, @want_out@, @tol_out@)",
        perf=list(PERF[p["layout"]]),
        perf_kind=0,
        calls=CALLS,
        kinds=list(INPUT_KINDS),
        helpers=HELPERS,
    )


def prompt(p: Params, ct: cpp.CType) -> str:
    integer = ct.key == "i32"
    acc = {"f32": "float", "f64": "double", "i32": "int"}[ct.key]
    header = f"include/{fn(p)}.h"
    if p["layout"] == "rows":
        layout = ("`x` and `out` are `rows x cols` row-major matrices; every row is scanned on its "
                  "own")  # fmt: skip
        sizes = "`rows, cols >= 0` (nothing to do when either is 0), `rows * cols < 2^31`"
    else:
        layout = "`x` and `out` are arrays of `n` elements"
        sizes = "`n >= 0` (nothing to do when 0), `n < 2^31`"
    flags = " `flags` has one `int` per element (same layout)." if p["segmented"] else ""
    pr, pc = PERF[p["layout"]]
    perf = f"{pr} x {pc} matrices" if p["layout"] == "rows" else f"arrays of {pc} elements"
    values = "integers in [-100, 100]" if integer else "uniform in [-1, 1]"
    return f"""Implement a parallel scan on the GPU. The interface is declared in `{header}`:

```c++
{signature(p, ct)};
```

- {layout}, of {ct.label} values in device memory (`out` does not overlap the inputs).{flags}
  Compute {what(p, integer)}
- Sizes: {sizes}. The tests cover single elements, lengths that are not multiples of 32 or of
  any block size, about a million elements and more; values are {values}, and some inputs
  are all negative or all positive. The benchmark times {CALLS} calls on {perf}, each with
  its own input.
- `out`'s previous contents are garbage. Do not write outside it and do not modify the inputs.
  Accumulate in {acc}.

{tolerance_text(p, acc, integer)}

{cpp.closing(header)}
"""


class Scan(Family):
    name = "scan"
    slug = "scan"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"

    def space(self) -> list[Params]:
        return space(DTYPES)

    def draw(self, rng: random.Random) -> Params:
        return rng.choice(space(DTYPES))

    def check(self, params: Params) -> Params:
        if params not in space(DTYPES):
            raise SpecError(f"not a {self.name} parameter set: {params}", field="params")
        return params

    def label(self, p: Params) -> str:
        seg = "-seg" if p["segmented"] else ""
        return f"{p['layout']}-{p['kind'][:4]}-{p['op']}-{p['dtype']}{seg}"

    def render(self, p: Params, task_id: str) -> Parts:
        ct = TYPES[p["dtype"]]
        rows, cols = PERF[p["layout"]]
        n = rows * cols
        in_bytes = n * ct.size + (4 * n if p["segmented"] else 0)
        float_add = p["op"] == "add" and ct.key != "i32"
        dt = {"f32": "fp32", "f64": "fp64", "i32": "int32"}[ct.key]
        return Parts(
            prompt=prompt(p, ct),
            context={f"include/{fn(p)}.h": cpp.header_file(
                signature(p, ct), f"{p['kind']} {p['op']} scan (see the task statement).", includes=[])},
            tests={
                "test/test_main.cu": cpp.harness(
                    task_id=task_id, family=self.name, summary=f"{p['kind']} {p['op']} scan",
                    header=f"{fn(p)}.h", includes=[], body=cpp_harness.body(harness_spec(p, ct))),
                "test/host_ref.h": host_ref(p, ct),
            },
            solution={"solution.cu": reference(p, ct)},
            baseline={"solution.cu": baseline(p, ct)},
            difficulty=difficulty(p),  # type: ignore[arg-type]
            tags=["scan", "prefix-sum", p["op"], p["dtype"]] + (["segmented"] if p["segmented"] else []),
            work={"flops": CALLS * n if float_add else 0, "bytes": CALLS * (in_bytes + n * ct.size),
                  "dtype": dt},
            forbidden=list(cpp.FORBIDDEN),
            extra_metadata={"bench_sizes": {"rows": rows, "cols": cols, "R": CALLS}},
        )  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        ct = TYPES[p["dtype"]]

        def m(name: str, kind: str, why: str, bug: str, det: bool = True) -> Mutant:
            return Mutant(name, kind, why, {"solution.cu": reference(p, ct, bug)}, det)  # type: ignore[arg-type]

        other = "exclusive" if p["kind"] == "inclusive" else "inclusive"
        out = [
            m("tail", "tail", "skips the last (length mod 32) elements", "tail"),
            m("operator", "operator", f"computes the {other} scan", "operator"),
        ]
        if p["segmented"]:
            out.append(m("boundary", "boundary", "ignores the segment heads", "boundary"))
        if p["op"] == "add" and not (p["segmented"] and p["dtype"] == "i32"):
            # (int segments are too short for a 16-bit accumulator to overflow)
            out.append(m("narrow", "accumulation", "accumulates in a narrower type", "narrow"))
        elif not p["segmented"]:
            out.append(
                m(
                    "boundary",
                    "boundary",
                    "treats every 1024-element tile as a new scan",
                    "tile-restart",
                )
            )
        out.append(
            m(
                "no-sync",
                "sync",
                "reads the warp totals before every warp wrote its own",
                "no-sync",
                False,
            )
        )
        return out  # fmt: skip
