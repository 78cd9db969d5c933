"""py-reduce-axis (numba-cuda): the reduce-axis operators over the rows or the columns of a
matrix or the middle axis of a 3-D array, float32 or float64, on host or device arrays."""

from __future__ import annotations

from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import py_parts
from cudaenv.families.py_reduce_axis_src import (
    DTYPES,
    IDENTITY0,
    LAST_INDEX,
    NARROW,
    SIGNED,
    TAIL,
    baseline,
    reference,
)
from cudaenv.families.reduce_ops import (
    CALLS,
    KIND_TEXT,
    OPS,
    PERF,
    SIZES,
    SPACE,
    difficulty,
    py_cases,
    tolerance_text,
    work,
)
from cudaenv.families.runners import Arg, Io

FORBIDDEN = {
    "sum": ["numpy.sum", "numpy.add.reduce", "numpy.nansum"],
    "mean": ["numpy.mean", "numpy.average", "numpy.sum", "numpy.add.reduce"],
    "norm2": ["numpy.linalg.norm", "numpy.sum", "numpy.dot", "numpy.add.reduce"],
    "max": ["numpy.max", "numpy.amax", "numpy.nanmax", "numpy.maximum.reduce"],
    "min": ["numpy.min", "numpy.amin", "numpy.nanmin", "numpy.minimum.reduce"],
    "absmax": ["numpy.max", "numpy.amax", "numpy.nanmax", "numpy.maximum.reduce"],
    "argmax": ["numpy.argmax", "numpy.nanargmax"],
    "argmin": ["numpy.argmin", "numpy.nanargmin"],
}


def io(p: Params) -> Io:
    out = "i32" if OPS[p["op"]].kind == "arg" else p["dtype"]
    return Io(f"{p['axis']}_{p['op']}", (Arg("x", p["dtype"]), Arg("out", out, "out")), SIZES,
              shifted=True)  # fmt: skip


def _prompt(params: Params) -> str:
    axis, op = params["axis"], OPS[params["op"]]
    np_dtype, acc = DTYPES[params["dtype"]]
    fn = f"{axis}_{op.key}"
    shape, target, sizes = {
        "row": ("2-D array of shape `(rows, cols)`", "`out[r]` (a 1-D array of length `rows`) "
                "for every row `r`", "`rows >= 0` (nothing to do when 0), `cols >= 1`"),
        "col": ("2-D array of shape `(rows, cols)`", "`out[c]` (a 1-D array of length `cols`) "
                "for every column `c`", "`rows >= 1`, `cols >= 0` (nothing to do when 0)"),
        "mid": ("3-D array of shape `(batch, rows, cols)`", "`out[b, c]` (a 2-D array of shape "
                "`(batch, cols)`) for every `b` and `c`, reducing over the middle axis",
                "`rows >= 1`, `batch >= 0`, `cols >= 0`"),
    }[axis]  # fmt: skip
    out_dtype = "int32" if op.kind == "arg" else np_dtype
    index = " The index counts along the reduced axis, from 0." if op.kind == "arg" else ""
    pr = " x ".join(map(str, PERF[axis] if axis == "mid" else PERF[axis][1:]))
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {fn}(x, out) -> None
```

- `x` is a C-contiguous `{np_dtype}` {shape}. Write to {target} {op.what} of the reduced
  elements.{index} `out` is a C-contiguous `{out_dtype}` array whose previous contents are
  garbage; do not modify `x`.
- Sizes: {sizes}. The tests cover single elements, lengths that are not multiples of any
  block size, very tall and very wide shapes and about a million elements (small sizes on
  numba-cuda's simulator); the benchmark times {CALLS} calls on {pr} device arrays.
- Values are finite (no NaN or infinity); the test inputs are:
  {"; ".join(KIND_TEXT[k] for k in op.kinds)}.

{tolerance_text(acc, op)}

{py.closing(fn)}
"""


class PyReduceAxis(Family):
    name = "py-reduce-axis"
    slug = "pyred"
    problem_type = "cuda_python"
    group = "cuda-python"
    params_space = SPACE
    limits = {"dtype": tuple(DTYPES), "pitched": (False,)}

    def render(self, params: Params, task_id: str) -> Parts:
        axis, op = params["axis"], OPS[params["op"]]
        size = 8 if params["dtype"] == "f64" else 4
        return py_parts(self.name, params, task_id, io=io(params), module="reduce_axis",
                        cases=py_cases(params), prompt=_prompt(params),
                        reference=reference(params), baseline=baseline(params),
                        difficulty=difficulty(axis, op, params["dtype"], False),  # type: ignore[arg-type]
                        tags=["numba", "reduction", f"{axis}-reduction", params["dtype"]],
                        work=work(op, params["dtype"], DTYPES[params["dtype"]][1], PERF[axis], axis,
                                  CALLS, size, 4 if op.kind == "arg" else size),
                        forbidden=FORBIDDEN[op.key])  # fmt: skip

    def mutants(self, params: Params) -> list[Mutant]:
        op = OPS[params["op"]]

        def m(name: str, kind: str, why: str, **kw: str) -> Mutant:
            return Mutant(name, kind, why, {"solution.py": reference(params, **kw)})  # type: ignore[arg-type]

        third = {
            "value": m("narrow", "accumulation", "shared partials in a narrower type", bug=NARROW),
            "extreme": m("identity0", "identity", "starts from 0, not the identity", bug=IDENTITY0),
            "arg": m("last-index", "operator", "returns the last index on ties", bug=LAST_INDEX),
        }[op.kind]
        if op.key == "absmax":
            third = m("signed", "operator", "returns the signed element", bug=SIGNED)
        return [
            m("tail", "tail", "skips the last (length mod 32 or 8) elements", bug=TAIL),
            m("operator", "operator", op.swap_note, op=op.swapped),
            third,
        ]
