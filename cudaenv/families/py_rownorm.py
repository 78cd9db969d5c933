"""py-rownorm (numba-cuda): the rownorm family's row-wise softmax, log-softmax, layernorm and
RMSNorm, float32 or float64, on host or device arrays."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.py_rownorm_src import _expected, baseline
from cudaenv.families.rownorm_ops import (
    FN,
    REGIMES,
    RTOL,
    difficulty,
    formula,
    space,
    tolerance_text,
)

DTYPES = ("f32", "f64")
NP = {"f32": "float32", "f64": "float64"}
SIM_SHAPES = [(0, 5), (1, 1), (3, 5), (2, 33), (4, 70)]
GPU_SHAPES = [(64, 1000), (1000, 64), (17, 4099), (4, 100003), (4096, 1), (70001, 3)]
SIM_PERF = (3, 37)
CALLS = 5
FORBIDDEN = {
    "softmax": ["numpy.exp", "numpy.sum", "numpy.max", "numpy.amax", "numpy.add.reduce"],
    "logsoftmax": ["numpy.exp", "numpy.log", "numpy.sum", "numpy.max", "numpy.logaddexp"],
    "layernorm": ["numpy.mean", "numpy.var", "numpy.std", "numpy.sum", "numpy.sqrt"],
    "rmsnorm": ["numpy.mean", "numpy.sum", "numpy.sqrt", "numpy.linalg.norm"],
}


def _extras(p: Params) -> list[str]:
    return {"none": [], "gamma": ["gamma"], "gamma_beta": ["gamma", "beta"]}[p["affine"]]


def _stats(p: Params, end: str, bug: str | None) -> str:
    """Kernel lines for one row (block-wide ``tree_sum``/``tree_max`` helpers)."""
    kind, s = p["kind"], repr(p["scale"])
    loop = f"j = tid\n        while j < {end}:\n"
    aff = "".join({"gamma": " * gamma[j]", "beta": " + beta[j]"}[e] for e in _extras(p))
    if kind in ("softmax", "logsoftmax"):
        m = ("m = 0.0" if bug == "operator" else
             f"acc = -math.inf\n        {loop}            acc = max(acc, x[r, j])\n            j += THREADS\n"
             "        m = tree_max(buf, tid, acc)")  # fmt: skip
        out = (f"inv = 1.0 / s\n        {loop}            y[r, j] = math.exp({s} * (x[r, j] - m)) * inv\n            j += THREADS"
               if kind == "softmax" else
               f"lse = math.log(s)\n        {loop}            y[r, j] = {s} * (x[r, j] - m) - lse\n            j += THREADS")  # fmt: skip
        return f"""        {m}
        acc = 0.0
        {loop}            acc += math.exp({s} * (x[r, j] - m))
            j += THREADS
        s = tree_sum(buf, tid, acc)
        {out}"""
    eps = repr(p["eps"])
    if kind == "layernorm":
        centre = "x[r, j]" if bug == "operator" else "(x[r, j] - mu)"
        return f"""        acc = 0.0
        {loop}            acc += x[r, j]
            j += THREADS
        mu = tree_sum(buf, tid, acc) / n
        acc = 0.0
        {loop}            d = x[r, j] - mu
            acc += d * d
            j += THREADS
        rstd = 1.0 / math.sqrt(tree_sum(buf, tid, acc) / n + {eps})
        {loop}            y[r, j] = {centre} * rstd{aff}
            j += THREADS"""
    root = (
        "(tree_sum(buf, tid, acc) / n + {e})"
        if bug == "operator"
        else "math.sqrt(tree_sum(buf, tid, acc) / n + {e})"
    )
    return f"""        acc = 0.0
        {loop}            acc += x[r, j] * x[r, j]
            j += THREADS
        rinv = 1.0 / {root.format(e=eps)}
        {loop}            y[r, j] = x[r, j] * rinv{aff}
            j += THREADS"""


def reference(p: Params, bug: str | None = None) -> str:
    acc = NP[p["dtype"]]
    if bug == "narrow":
        acc = "float32" if acc == "float64" else "int32"
    end = "n - n % 32" if bug == "tail" else "n"
    extra = "".join(f"{e}, " for e in _extras(p))
    devs = "".join(f"    d{e} = cuda.to_device({e}) if host else {e}\n" for e in _extras(p))
    dargs = "".join(f"d{e}, " for e in _extras(p))
    return f'''"""Row-wise {p["kind"]}: one block per row, block reductions in shared memory."""

import math

import numpy as np
from numba import cuda, float32, float64, int32

THREADS = 64


@cuda.jit(device=True)
def tree_sum(buf, tid, v):
    # The block's sum of v, in every thread (buf: THREADS partials).
    cuda.syncthreads()
    buf[tid] = v
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if tid < step:
            buf[tid] = buf[tid] + buf[tid + step]
        cuda.syncthreads()
        step //= 2
    return buf[0]


@cuda.jit(device=True)
def tree_max(buf, tid, v):
    cuda.syncthreads()
    buf[tid] = v
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if tid < step:
            buf[tid] = max(buf[tid], buf[tid + step])
        cuda.syncthreads()
        step //= 2
    return buf[0]


@cuda.jit
def _rows(x, {extra}y):
    buf = cuda.shared.array(THREADS, dtype={acc})
    tid = cuda.threadIdx.x
    rows = x.shape[0]
    n = x.shape[1]
    r = cuda.blockIdx.x
    while r < rows:
{_stats(p, end, bug)}
        r += cuda.gridDim.x


def {FN[p["kind"]]}(x, {extra}y):
    rows = x.shape[0]
    if rows == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
{devs}    dy = cuda.to_device(y) if host else y
    _rows[min(rows, 65535), THREADS](dx, {dargs}dy)
    if host:
        dy.copy_to_host(y)
'''


def _harness(p: Params, task_id: str) -> str:
    acc = "double" if p["dtype"] == "f64" else "float"
    extras = _extras(p)
    ex_make = "".join(
        f"    {e} = rng.uniform({'-2.0, 2.0' if e == 'gamma' else '-1.0, 1.0'}, cols).astype(DTYPE)\n"
        for e in extras
    )
    names = ", ".join(["x", *extras])
    shifted = "offset" if p["kind"] in ("layernorm", "rmsnorm") else "shifted"
    body = f"""
DTYPE = np.{NP[p["dtype"]]}
R = {RTOL[p["kind"]][acc]!r}
A = {1e-300 if acc == "double" else 1e-10!r}
KINDS = ("uniform", {shifted!r}, "constant")
CASES = {SIM_SHAPES!r}
if not SIM:
    CASES += {GPU_SHAPES!r}
PERF_SHAPE = {SIM_PERF!r} if SIM else {REGIMES[p["regime"]]!r}
CALLS = 2 if SIM else {CALLS}


def make(rows, cols, kind, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-5.0, 5.0, (rows, cols))
    if kind == "shifted":  # exp overflows without the row maximum, even in float64
        x += 1000.0 * ((np.arange(rows) % 5) - 2)[:, None]
    elif kind == "offset":
        x = 4.0 + x / 5.0
    elif kind == "constant":
        x[:] = 1.5
    x = x.astype(DTYPE)
{ex_make}    return [{names}]


# Expected values from NumPy in float64 (independent of any solution).
# {tolerance_text(p, acc)}
def check(tag, got, xs):
    [{names}] = xs
    v = x.astype(np.float64)
    {_expected(p).replace(chr(10) + "    ", chr(10) + "    ")}
    want = np.broadcast_to(want, v.shape)
    return close(tag, got, want, np.broadcast_to(tol, v.shape))


def run_tests(sol):
    for i, (rows, cols) in enumerate(CASES):
        kind = KINDS[i % 3]
        xs = make(rows, cols, kind, 1000 + i)
        for device in (False, True) if 1 <= i <= 2 else (True,):
            tag = f"{{'device' if device else 'host'}} {{kind}} {{rows}}x{{cols}}"
            r = sol.call([*xs, Out(np.full((rows, cols), np.nan, dtype=DTYPE))], device=device)
            if not all(unchanged(tag, a, x) for a, x in zip(r.arrays, xs)):
                return
            if not check(tag, r.arrays[{len(extras) + 1}], xs):
                return
        print("ok  ", kind, rows, cols)
    xs = make(3, 37, KINDS[1], 7)
    r = sol.call([*xs, Out(np.full((3, 37), np.nan, dtype=DTYPE))], device=True)
    if check(f"device {{KINDS[1]}} 3x37", r.arrays[{len(extras) + 1}], xs):
        print("ok  ", KINDS[1], 3, 37)


def run_perf(sol):
    rng = np.random.default_rng(BENCH_SEED)
    sets = [make(*PERF_SHAPE, KINDS[1], int(rng.integers(1 << 62))) for _ in range(CALLS)]
    garbage = np.full(PERF_SHAPE, np.nan, dtype=DTYPE)
    calls = [[*xs, Out(garbage)] for xs in sets]
    for k, (r, xs) in enumerate(zip(sol.bench(calls, warm=calls[0]), sets)):
        if not check(f"perf call {{k}}", r.arrays[0], xs):
            return
    print(f"perf {{PERF_SHAPE}} x{{CALLS}} done")
"""
    return py.harness(task_id=task_id, family=PyRowNorm.name, summary=f"row-wise {p['kind']}",
                      function=FN[p["kind"]], body=body)  # fmt: skip


def _prompt(p: Params) -> str:
    dt = NP[p["dtype"]]
    acc = "double" if p["dtype"] == "f64" else "float"
    extra = "".join(f"{e}, " for e in _extras(p))
    ex = f" `{'`, `'.join(_extras(p))}` are 1-D arrays of length `cols`." if _extras(p) else ""
    rows, cols = REGIMES[p["regime"]]
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {FN[p["kind"]]}(x, {extra}y) -> None
```

- `x` and `y` are C-contiguous `{dt}` arrays of shape `(rows, cols)`.{ex} For every row
  `r`: {formula(p)}. Do not modify the inputs.
- Sizes: `rows >= 0` (nothing to do when 0), `cols >= 1`; rows may be short (1 or 3 columns)
  or long (10^5 columns), and small on numba-cuda's simulator. The inputs include rows shifted
  by multiples of 1000 (softmax: exponentiating without the row maximum overflows) or around 4
  (norms), and constant rows. The benchmark times {CALLS} calls on {rows} x {cols} device arrays.

{tolerance_text(p, acc)}

{py.closing(FN[p["kind"]])}
"""


class PyRowNorm(Family):
    name = "py-rownorm"
    slug = "pyrown"
    problem_type = "cuda_python"
    group = "cuda-python"

    def space(self) -> list[Params]:
        return space(DTYPES)

    def draw(self, rng: random.Random) -> Params:
        return rng.choice(space(DTYPES))

    def check(self, params: Params) -> Params:
        if params not in space(DTYPES):
            raise SpecError(f"not a {self.name} parameter set: {params}", field="params")
        return params

    def label(self, p: Params) -> str:
        extra = f"-{p['affine'].replace('_', '')}" if p["affine"] != "none" else ""
        return f"{p['kind']}-{p['regime']}-{p['dtype']}{extra}"

    def render(self, p: Params, task_id: str) -> Parts:
        size = 8 if p["dtype"] == "f64" else 4
        rows, cols = REGIMES[p["regime"]]
        n = rows * cols
        per_elem = {"softmax": 4, "logsoftmax": 5, "layernorm": 6, "rmsnorm": 3}[p["kind"]]
        per_elem += len(_extras(p)) + (p["scale"] != 1.0)
        script = f"test/test_{FN[p['kind']]}.py"
        return Parts(
            prompt=_prompt(p),
            context={},
            tests={script: _harness(p, task_id), py.PYCHILD: py.pychild()},
            solution={"solution.py": reference(p)},
            baseline={"solution.py": baseline(p)},
            difficulty=difficulty(p),  # type: ignore[arg-type]
            tags=["numba", "normalization", p["kind"], p["dtype"]],
            work={
                "flops": CALLS * (n * per_elem + 2 * rows),
                "bytes": CALLS * (2 * n + len(_extras(p)) * cols) * size,
                "dtype": "fp64" if p["dtype"] == "f64" else "fp32",
            },
            forbidden=FORBIDDEN[p["kind"]],
            harness=script,
            timeout_s=300,
            extra_metadata={"bench_sizes": {"shape": [rows, cols], "CALLS": CALLS}},
        )

    def mutants(self, p: Params) -> list[Mutant]:
        why = {"softmax": "does not subtract the row maximum",
               "logsoftmax": "does not subtract the row maximum",
               "layernorm": "does not subtract the mean from the output",
               "rmsnorm": "forgets the square root"}[p["kind"]]  # fmt: skip
        return [
            Mutant("tail", "tail", "skips the last cols mod 32 elements", {"solution.py": reference(p, "tail")}),
            Mutant("operator", "operator", why, {"solution.py": reference(p, "operator")}),
            Mutant("narrow", "accumulation", "block partials in a narrower type",
                   {"solution.py": reference(p, "narrow")}),
        ]  # fmt: skip
