"""py-rownorm (numba-cuda): the rownorm family's row-wise softmax, log-softmax, layernorm and
RMSNorm, float32 or float64, on host or device arrays."""

from __future__ import annotations

from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import py_parts
from cudaenv.families.py_rownorm_src import baseline
from cudaenv.families.rownorm_ops import (
    CALLS,
    FN,
    REGIMES,
    SIZES,
    SPACE,
    difficulty,
    extras,
    formula,
    py_cases,
    tolerance_text,
    work,
)
from cudaenv.families.runners import Arg, Io

DTYPES = ("f32", "f64")
NP = {"f32": "float32", "f64": "float64"}
FORBIDDEN = {
    "softmax": ["numpy.exp", "numpy.sum", "numpy.max", "numpy.amax", "numpy.add.reduce"],
    "logsoftmax": ["numpy.exp", "numpy.log", "numpy.sum", "numpy.max", "numpy.logaddexp"],
    "layernorm": ["numpy.mean", "numpy.var", "numpy.std", "numpy.sum", "numpy.sqrt"],
    "rmsnorm": ["numpy.mean", "numpy.sum", "numpy.sqrt", "numpy.linalg.norm"],
}


_extras = extras


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


def io(p: Params) -> Io:
    args = (Arg("x", p["dtype"]), *(Arg(e, p["dtype"]) for e in _extras(p)))
    return Io(FN[p["kind"]], (*args, Arg("y", p["dtype"], "out")), SIZES)


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
    params_space = SPACE
    limits = {"dtype": DTYPES}

    def render(self, p: Params, task_id: str) -> Parts:
        return py_parts(self.name, p, task_id, io=io(p), module="rownorm", cases=py_cases(p),
                        prompt=_prompt(p), reference=reference(p), baseline=baseline(p),
                        difficulty=difficulty(p),  # type: ignore[arg-type]
                        tags=["numba", "normalization", p["kind"], p["dtype"]],
                        work=work(p, 8 if p["dtype"] == "f64" else 4),
                        forbidden=FORBIDDEN[p["kind"]])  # fmt: skip

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
