"""py-elementwise (numba-cuda): the elementwise family's fused expressions over NumPy-style
broadcast inputs (full ``(rows, cols)``, row vectors ``(cols,)``, column vectors
``(rows, 1)``), float32 or float64, on host or device arrays."""

from __future__ import annotations

import random
import textwrap

from cudaenv.families import expr, py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.elementwise import check_params, compute_type, difficulty, draw_params

DTYPES = ("f32", "f64")
NP = {"f32": "float32", "f64": "float64"}
FN = "fused_elementwise"
SIM_SHAPES = [(0, 7), (1, 1), (1, 33), (3, 5), (7, 32), (5, 70)]
GPU_SHAPES = [(64, 257), (1000, 1), (20000, 3), (3, 100003), (300, 4099), (1024, 1024)]
PERF = (4096, 4096)
SIM_PERF = (5, 37)
CALLS = 5
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


def _harness(params: Params, task_id: str) -> str:
    _, u = compute_type(params["dtype"])
    lines, v, e = expr.bound_code(params["expr"], "numpy")
    bound = "\n".join(f"    {ln}" for ln in lines)
    shapes = {"full": "(rows, cols)", "row": "(cols,)", "col": "(rows, 1)"}
    make = "".join(
        f"    x{i} = rng.uniform(-2.0, 2.0, {shapes[b]}).astype(DTYPE)\n"
        for i, b in enumerate(params["bcast"])
    )
    names = ", ".join(f"x{i}" for i in range(len(params["bcast"])))
    as64 = "".join(f"    x{i} = x{i}.astype(np.float64)\n" for i in range(len(params["bcast"])))
    n_in = len(params["bcast"])
    body = f"""
DTYPE = np.{NP[params["dtype"]]}
U = {u!r}  # unit roundoff of {compute_type(params["dtype"])[0]}
CASES = {SIM_SHAPES!r}
if not SIM:
    CASES += {GPU_SHAPES!r}
PERF_SHAPE = {SIM_PERF!r} if SIM else {PERF!r}
CALLS = 2 if SIM else {CALLS}


def make(rows, cols, seed):
    rng = np.random.default_rng(seed)
{make}    return [{names}]


# Expected: out = {expr.math_text(params["expr"])}, exact in float64 (NumPy, written
# independently of any solution), and twice the forward error bound of evaluating the formula
# in a type of unit roundoff U, node by node, as the tolerance.
def expected({names}, shape):
{as64}{bound}
    want = np.broadcast_to({v}, shape)
    tol = 2.0 * np.broadcast_to({e}, shape) + 1e-300
    return want, tol


def check(tag, got, xs):
    want, tol = expected(*xs, got.shape)
    return close(tag, got, want, tol)


def run_tests(sol):
    for i, (rows, cols) in enumerate(CASES):
        xs = make(rows, cols, 1000 + i)
        for device in (False, True) if 1 <= i <= 2 else (True,):
            tag = f"{{'device' if device else 'host'}} {{rows}}x{{cols}}"
            out = Out(np.full((rows, cols), np.nan, dtype=DTYPE))
            r = sol.call([*xs, out], device=device)
            if not all(unchanged(tag, a, x) for a, x in zip(r.arrays, xs)):
                return
            if not check(tag, r.arrays[{n_in}], xs):
                return
        print("ok  ", rows, cols)


def run_perf(sol):
    rng = np.random.default_rng(BENCH_SEED)
    sets = [make(*PERF_SHAPE, int(rng.integers(1 << 62))) for _ in range(CALLS)]
    garbage = np.full(PERF_SHAPE, np.nan, dtype=DTYPE)
    calls = [[*xs, Out(garbage)] for xs in sets]
    for k, (r, xs) in enumerate(zip(sol.bench(calls, warm=calls[0]), sets)):
        if not check(f"perf call {{k}}", r.arrays[0], xs):
            return
    print(f"perf {{PERF_SHAPE}} x{{CALLS}} done")
"""
    return py.harness(task_id=task_id, family=PyElementwise.name,
                      summary="fused element-wise expression", function=FN, body=body)  # fmt: skip


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

    def draw(self, rng: random.Random) -> Params:
        return draw_params(rng, DTYPES)

    def check(self, params: Params) -> Params:
        return check_params(self.name, params, DTYPES)

    def label(self, params: Params) -> str:
        bc = "".join(b[0] for b in params["bcast"])
        return f"{len(params['bcast'])}in-{bc}-d{expr.depth(params['expr'])}-{params['dtype']}"

    def render(self, params: Params, task_id: str) -> Parts:
        size = 8 if params["dtype"] == "f64" else 4
        rows, cols = PERF
        n = rows * cols
        in_elems = sum({"full": n, "row": cols, "col": rows}[b] for b in params["bcast"])
        return Parts(
            prompt=_prompt(params),
            context={},
            tests={f"test/test_{FN}.py": _harness(params, task_id), py.PYCHILD: py.pychild()},
            solution={"solution.py": reference(params)},
            baseline={"solution.py": baseline(params)},
            difficulty=difficulty(params),  # type: ignore[arg-type]
            tags=["numba", "elementwise", "fusion", params["dtype"]]
            + (["broadcast"] if any(b != "full" for b in params["bcast"]) else []),
            work={
                "flops": CALLS * n * expr.size(params["expr"]),
                "bytes": CALLS * (in_elems + n) * size,
                "dtype": "fp64" if params["dtype"] == "f64" else "fp32",
            },
            forbidden=FORBIDDEN,
            harness=f"test/test_{FN}.py",
            timeout_s=300,
            extra_metadata={"bench_sizes": {"shape": list(PERF), "CALLS": CALLS}},
        )

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
