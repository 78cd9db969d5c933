"""py-reduce-axis (numba-cuda): the reduce-axis operators over the rows or the columns of a
matrix or the middle axis of a 3-D array, float32 or float64, on host or device arrays."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.py_reduce_axis_src import (
    DTYPES,
    IDENTITY0,
    LAST_INDEX,
    NARROW,
    SIGNED,
    TAIL,
    _space,
    baseline,
    reference,
)
from cudaenv.families.reduce_ops import (
    ATOL,
    KIND_RANGE,
    KIND_TEXT,
    OPS,
    RTOL,
    difficulty,
    num,
    tolerance_text,
    work,
)

SIM_SHAPES = {
    "row": [(0, 5), (1, 1), (3, 5), (2, 33), (4, 70)],
    "col": [(5, 0), (1, 1), (5, 3), (33, 2), (70, 4)],
    "mid": [(0, 3, 4), (1, 1, 1), (2, 5, 3), (2, 33, 2), (3, 7, 5)],
}
GPU_SHAPES = {
    "row": [(1000, 3), (64, 257), (300, 4099), (3, 100003), (2, 1 << 20)],
    "col": [(3, 1000), (257, 64), (4099, 300), (100003, 3), (1 << 20, 2)],
    "mid": [(64, 100, 3), (5, 1000, 65), (17, 257, 257), (4, 65536, 3)],
}
SPECIAL = {"row": (3, 37), "col": (37, 3), "mid": (2, 37, 3)}
PERF = {"row": (8192, 2048), "col": (2048, 8192), "mid": (64, 256, 1024)}
SIM_PERF = {"row": (3, 37), "col": (37, 3), "mid": (2, 9, 5)}
CALLS = 5
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
_AXIS = {"row": 1, "col": 0, "mid": 1}


def _expected(op: str) -> str:
    return {
        "sum": "want = x64.sum(axis=AXIS)\n    tol = RTOL * np.abs(x64).sum(axis=AXIS) + ATOL",
        "mean": "want = x64.mean(axis=AXIS)\n    tol = RTOL * np.abs(x64).mean(axis=AXIS) + ATOL",
        "norm2": "want = np.sqrt((x64 * x64).sum(axis=AXIS))\n    tol = RTOL * want + ATOL",
        "max": "want = x.max(axis=AXIS)\n    tol = None",
        "min": "want = x.min(axis=AXIS)\n    tol = None",
        "absmax": "want = np.abs(x).max(axis=AXIS)\n    tol = None",
        "argmax": "want = np.argmax(x, axis=AXIS).astype(np.int32)\n    tol = None",
        "argmin": "want = np.argmin(x, axis=AXIS).astype(np.int32)\n    tol = None",
    }[op]


def _cases(axis: str, kinds: tuple[str, ...], shapes: list[tuple[int, ...]]) -> str:
    rows = [f"    ({kinds[i % len(kinds)]!r}, {s})," for i, s in enumerate(shapes)]
    return "[\n" + "\n".join(rows) + "\n]"


def _harness(params: Params, task_id: str) -> str:
    axis, op = params["axis"], OPS[params["op"]]
    np_dtype, acc = DTYPES[params["dtype"]]
    sim = SIM_SHAPES[axis] + [SPECIAL[axis]] * (len(op.kinds) - 1)
    sim_kinds = [op.kinds[i % len(op.kinds)] for i in range(len(SIM_SHAPES[axis]))]
    sim_kinds += list(op.kinds[1:])
    sim_cases = (
        "[\n" + "\n".join(f"    ({k!r}, {s})," for k, s in zip(sim_kinds, sim, strict=True)) + "\n]"
    )
    out_dtype = "np.int32" if op.kind == "arg" else f"np.{np_dtype}"
    out_shape = {"row": "x.shape[:1]", "col": "x.shape[1:]", "mid": "(x.shape[0], x.shape[2])"}
    fill = "-7" if op.kind == "arg" else "np.nan"
    ranges = {k: v for k, v in KIND_RANGE.items() if k != "ties"}
    body = f"""
DTYPE = np.{np_dtype}
OUT_DTYPE = {out_dtype}
AXIS = {_AXIS[axis]}  # the reduced axis
RTOL = {num(RTOL[acc])}
ATOL = {ATOL:g}
RANGES = {ranges!r}
CASES = {sim_cases}
if not SIM:
    CASES += {_cases(axis, op.kinds, GPU_SHAPES[axis])}
PERF_SHAPE = {SIM_PERF[axis]} if SIM else {PERF[axis]}
CALLS = 2 if SIM else {CALLS}


def make(shape, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "ties":  # small integers: extreme values repeat
        return rng.integers(-3, 4, size=shape).astype(DTYPE)
    lo, hi = RANGES[kind]
    return rng.uniform(lo, hi, size=shape).astype(DTYPE)


def out_buffer(x):
    return Out(np.full({out_shape[axis]}, {fill}, dtype=OUT_DTYPE))


# Expected values from NumPy in float64 (written independently of any solution).
# {tolerance_text(acc, op)}
def check(tag, got, x):
    x64 = x.astype(np.float64)
    {_expected(op.key)}
    if tol is None:
        return exact(tag, got, want)
    return close(tag, got, want, tol)


def run_tests(sol):
    for i, (kind, shape) in enumerate(CASES):
        x = make(shape, kind, 1000 + i)
        for device in (False, True) if 1 <= i <= 2 else (True,):
            tag = f"{{'device' if device else 'host'}} {{kind}} {{shape}}"
            r = sol.call([x, out_buffer(x)], device=device)
            if not (unchanged(tag, r.arrays[0], x) and check(tag, r.arrays[1], x)):
                return
        print("ok  ", kind, shape)


def run_perf(sol):
    rng = np.random.default_rng(BENCH_SEED)
    xs = [make(PERF_SHAPE, {op.kinds[0]!r}, int(rng.integers(1 << 62))) for _ in range(CALLS)]
    results = sol.bench([[x, out_buffer(x)] for x in xs], warm=[xs[0], out_buffer(xs[0])])
    for k, (r, x) in enumerate(zip(results, xs)):
        if not check(f"perf call {{k}}", r.arrays[0], x):
            return
    print(f"perf {{PERF_SHAPE}} x{{CALLS}} done")
"""
    return py.harness(
        task_id=task_id,
        family=PyReduceAxis.name,
        summary=f"{axis}-wise {op.key} ({np_dtype})",
        function=f"{axis}_{op.key}",
        body=body,
    )


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
    pr = " x ".join(map(str, PERF[axis]))
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

    def space(self) -> list[Params]:
        return _space()

    def draw(self, rng: random.Random) -> Params:
        return rng.choice(_space())

    def check(self, params: Params) -> Params:
        if params not in _space():
            raise SpecError(f"not a {self.name} parameter set: {params}", field="params")
        return params

    def label(self, params: Params) -> str:
        return f"{params['axis']}-{params['op']}-{params['dtype']}"

    def render(self, params: Params, task_id: str) -> Parts:
        axis, op = params["axis"], OPS[params["op"]]
        fn = f"{axis}_{op.key}"
        size = 8 if params["dtype"] == "f64" else 4
        shape = PERF[axis] if axis == "mid" else (1, *PERF[axis])
        return Parts(
            prompt=_prompt(params),
            context={},
            tests={f"test/test_{fn}.py": _harness(params, task_id), py.PYCHILD: py.pychild()},
            solution={"solution.py": reference(params)},
            baseline={"solution.py": baseline(params)},
            difficulty=difficulty(axis, op, params["dtype"], False),  # type: ignore[arg-type]
            tags=["numba", "reduction", f"{axis}-reduction", params["dtype"]],
            work=work(
                op,
                params["dtype"],
                DTYPES[params["dtype"]][1],
                shape,
                axis,
                CALLS,
                size,
                4 if op.kind == "arg" else size,
                shifted=False,
            ),
            extra_metadata={"bench_sizes": {"shape": list(PERF[axis]), "CALLS": CALLS}},
            forbidden=FORBIDDEN[op.key],
            harness=f"test/test_{fn}.py",
            timeout_s=300,
        )

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
