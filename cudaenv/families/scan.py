"""scan (cuda_cpp): inclusive or exclusive prefix scans with add, max or min over float,
double or int, of one long array or of every row of a matrix, plain or segmented by head
flags."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import cpp_parts
from cudaenv.families.runners import Arg, Io
from cudaenv.families.scan_ops import (
    CALLS,
    PERF,
    SIZES,
    SPACE,
    cpp_cases,
    difficulty,
    fn,
    tolerance_text,
    what,
    work,
)
from cudaenv.families.scan_src import baseline, reference, signature

TYPES = {**cpp.CTYPES, "i32": cpp.INT32}


def io(p: Params) -> Io:
    args = [Arg("x", p["dtype"])] + ([Arg("flags", "i32")] if p["segmented"] else [])
    fl = "@flags@, " if p["segmented"] else ""
    dims = "rows, cols" if p["layout"] == "rows" else "cols"
    call = f"{fn(p)}(@x@, {fl}@out@, {dims})"
    return Io(fn(p), (*args, Arg("out", p["dtype"], "out")), SIZES, call)


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
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = TYPES[p["dtype"]]
        return cpp_parts(self.name, p, task_id, header=f"{fn(p)}.h", declaration=signature(p, ct),
                         comment=f"{p['kind']} {p['op']} scan (see the task statement).",
                         includes=[], io=io(p), module="scan", cases=cpp_cases(p),
                         prompt=prompt(p, ct), reference=reference(p, ct), baseline=baseline(p, ct),
                         difficulty=difficulty(p),  # type: ignore[arg-type]
                         tags=["scan", "prefix-sum", p["op"], p["dtype"]] + (["segmented"] if p["segmented"] else []),
                         work=work(p))  # fmt: skip

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
