"""py-elementwise (numba-cuda): the elementwise family's fused expressions over NumPy-style
broadcast inputs (full ``(rows, cols)``, row vectors ``(cols,)``, column vectors
``(rows, 1)``), float32 or float64, on host or device arrays."""

from __future__ import annotations

import textwrap

from cudaenv.families import expr, py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.elementwise_ops import (
    CALLS,
    FN,
    PERF,
    SIZES,
    SPACE,
    compute_type,
    difficulty,
    py_cases,
    work,
)
from cudaenv.families.parts import py_parts
from cudaenv.families.runners import Arg, Io

DTYPES = ("f32", "f64")
NP = {"f32": "float32", "f64": "float64"}
FORBIDDEN = ["numpy.add", "numpy.subtract", "numpy.multiply", "numpy.maximum", "numpy.minimum",
             "numpy.tanh", "numpy.exp", "numpy.abs", "numpy.absolute", "numpy.square"]  # fmt: skip


def _load(i: int, kind: str) -> str:
    return {
        "full": f"x{i}[r, c]",
        "row": f"x{i}[c]",
        "col": f"x{i}[r, 0]",
        "row-wrong": f"x{i}[r % cols]",  # the axis mutant: the row vector indexed by row
        "col-wrong": f"x{i}[c % rows, 0]",
    }[kind]


def reference(params: Params, *, tree: object = None, bug: str | None = None) -> str:
    tree = tree if tree is not None else params["expr"]
    bc = list(params["bcast"])
    wrap = "float32" if bug == "precision" else ""
    if bug == "axis":
        k = next(i for i, b in enumerate(bc) if b != "full")
        bc[k] = bc[k] + "-wrong"
    loads = "".join(f"        v{i} = {_load(i, b)}\n" for i, b in enumerate(bc))
    ins = "".join(f"x{i}, " for i in range(len(bc)))
    end = "cols - cols % 32" if bug == "tail" else "cols"
    rows_end = "rows - 1" if bug == "last-row" else "rows"
    devs = "".join(f"    d{i} = cuda.to_device(x{i}) if host else x{i}\n" for i in range(len(bc)))
    dargs = "".join(f"d{i}, " for i in range(len(bc)))
    return f'''"""out = {expr.math_text(params["expr"])}, element-wise with broadcasting."""

import math

import numpy as np
from numba import cuda, float32

TX = 32
TY = 4


@cuda.jit
def _kernel({ins}out):
    # Blocks of 32 adjacent columns x 4 rows; the grid strides over the rows.
    rows = out.shape[0]
    cols = out.shape[1]
    c = cuda.blockIdx.x * TX + cuda.threadIdx.x
    r = cuda.blockIdx.y * TY + cuda.threadIdx.y
    while r < {rows_end}:
        if c < {end}:
{textwrap.indent(loads, "    ")}            out[r, c] = {expr.python(tree, wrap)}
        r += cuda.gridDim.y * TY


def {FN}({ins}out):
    rows = out.shape[0]
    cols = out.shape[1]
    if rows == 0 or cols == 0:
        return
    host = isinstance(out, np.ndarray)
{devs}    dout = cuda.to_device(out) if host else out
    grid = ((cols + TX - 1) // TX, min((rows + TY - 1) // TY, 65535))
    _kernel[grid, (TX, TY)]({dargs}dout)
    if host:
        dout.copy_to_host(out)
'''


def baseline(params: Params) -> str:
    bc = params["bcast"]
    loads = "".join(f"        v{i} = {_load(i, b)}\n" for i, b in enumerate(bc))
    ins = "".join(f"x{i}, " for i in range(len(bc)))
    devs = "".join(f"    d{i} = cuda.to_device(x{i}) if host else x{i}\n" for i in range(len(bc)))
    dargs = "".join(f"d{i}, " for i in range(len(bc)))
    return f'''"""Naive baseline: one thread per row walks its columns (no load is coalesced)."""

import math

import numpy as np
from numba import cuda


@cuda.jit
def _naive({ins}out):
    r = cuda.grid(1)
    if r >= out.shape[0]:
        return
    for c in range(out.shape[1]):
{loads}        out[r, c] = {expr.python(params["expr"])}


def {FN}({ins}out):
    rows = out.shape[0]
    if rows == 0 or out.shape[1] == 0:
        return
    host = isinstance(out, np.ndarray)
{devs}    dout = cuda.to_device(out) if host else out
    _naive[(rows + 127) // 128, 128]({dargs}dout)
    if host:
        dout.copy_to_host(out)
'''


def io(params: Params) -> Io:
    n = len(params["bcast"])
    args = tuple(Arg(f"x{i}", params["dtype"]) for i in range(n))
    return Io(FN, (*args, Arg("out", params["dtype"], "out")), SIZES)


def _prompt(params: Params) -> str:
    comp, _ = compute_type(params["dtype"])
    dt = NP[params["dtype"]]
    shapes = []
    for i, b in enumerate(params["bcast"]):
        shapes.append({
            "full": f"`x{i}` has shape `(rows, cols)`",
            "row": f"`x{i}` has shape `(cols,)` (broadcast over the rows)",
            "col": f"`x{i}` has shape `(rows, 1)` (broadcast over the columns)",
        }[b])  # fmt: skip
    ins = "".join(f"x{i}, " for i in range(len(params["bcast"])))
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {FN}({ins}out) -> None
```

- `out` is a C-contiguous `{dt}` array of shape `(rows, cols)`; {"; ".join(shapes)}; all
  inputs are C-contiguous `{dt}` arrays. Write `out = {expr.math_text(params["expr"])}`
  element-wise, with NumPy's broadcasting, where `relu(t) = max(t, 0)`,
  `sigmoid(t) = 1 / (1 + exp(-t))` and `(t)^2 = t * t`. Do not modify the inputs.
- Sizes: `rows, cols >= 0` (nothing to do when either is 0). The tests cover single
  elements, sizes that are not multiples of any block size, very tall and very wide shapes
  and a million elements (small sizes on numba-cuda's simulator); inputs are uniform in
  [-2, 2]. The benchmark times {CALLS} calls on {PERF[0]} x {PERF[1]} device arrays.

Checking: every element must be within twice the forward error bound of evaluating the
formula as written in {comp} (each operation's rounding plus what its operands' errors can
become), around the exact value computed in float64 on the CPU: evaluating in {comp} or wider
passes, in a narrower type does not.

{py.closing(FN)}
"""


class PyElementwise(Family):
    name = "py-elementwise"
    slug = "pyew"
    problem_type = "cuda_python"
    group = "cuda-python"
    weight = 1.2
    params_space = SPACE
    limits = {"dtype": DTYPES}

    def render(self, params: Params, task_id: str) -> Parts:
        return py_parts(self.name, params, task_id, io=io(params), module="elementwise",
                        cases=py_cases(params), prompt=_prompt(params),
                        reference=reference(params), baseline=baseline(params),
                        difficulty=difficulty(params),  # type: ignore[arg-type]
                        tags=["numba", "elementwise", "fusion", params["dtype"]]
                        + (["broadcast"] if any(b != "full" for b in params["bcast"]) else []),
                        work=work(params, 8 if params["dtype"] == "f64" else 4),
                        forbidden=FORBIDDEN)  # fmt: skip

    def mutants(self, params: Params) -> list[Mutant]:
        def m(name: str, kind: str, why: str, **kw: object) -> Mutant:
            return Mutant(name, kind, why, {"solution.py": reference(params, **kw)})  # type: ignore[arg-type]

        tree = params["expr"]
        out = [
            m("tail", "tail", "skips the last cols mod 32 columns", bug="tail"),
            m(
                "operator",
                "operator",
                "the outermost operator is swapped",
                tree=expr.swap_root(tree),
            ),
        ]
        if any(b != "full" for b in params["bcast"]):
            out.append(
                m("axis", "axis", "a broadcast vector indexed along the wrong axis", bug="axis")
            )
        elif params["dtype"] == "f64":
            out.append(m("precision", "accumulation", "evaluates in float32", bug="precision"))
        else:
            out.append(m("last-row", "boundary", "skips the last row", bug="last-row"))
        return out
