"""py-stencil (numba-cuda): the stencil family's 1-D and 2-D stencils with boundary modes,
float32 or float64, on host or device arrays."""

from __future__ import annotations

from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import py_parts
from cudaenv.families.runners import Arg, Io
from cudaenv.families.stencil_ops import (
    CALLS,
    PERF_1D,
    PERF_2D,
    SPACE,
    WRONG_BOUNDARY,
    boundary_text,
    difficulty,
    py_cases,
    sizes_of,
    taps,
    taps_text,
    tolerance_text,
    work,
)

DTYPES = ("f32", "f64")
NP = {"f32": "float32", "f64": "float64"}
FORBIDDEN = ["numpy.convolve", "numpy.correlate", "numpy.pad", "numpy.roll", "numpy.add",
             "numpy.multiply", "numpy.dot", "numpy.sum"]  # fmt: skip


def fn(p: Params) -> str:
    return f"stencil_{p['dim']}d"


def _bidx(mode: str) -> str:
    body = {
        "clamp": "if j < 0:\n        return 0\n    if j >= n:\n        return n - 1\n    return j",
        "zero": "if j < 0 or j >= n:\n        return -1\n    return j",
        "wrap": "return j % n",
        "mirror": "if n == 1:\n        return 0\n    m = j % (2 * n - 2)\n    if m < n:\n        return m\n"
        "    return 2 * n - 2 - m",
    }[mode]
    return f"@cuda.jit(device=True)\ndef bidx(j, n):\n    # boundary: {mode}\n    {body}\n"


def _terms(p: Params, src: str, bug: str | None, cast: str) -> str:
    out = []
    for k, (a, b, w) in enumerate(taps(p)):
        w = -w if bug == "operator" and k == 0 else w
        term = f"acc + {w!r} * {src.format(a=a, b=b)}"
        out.append(f"acc = {cast}({term})" if cast else f"acc = {term}")
    return out


def reference(p: Params, bug: str | None = None) -> str:
    mode = WRONG_BOUNDARY[p["boundary"]] if bug == "boundary" else p["boundary"]
    dt = "float32" if bug == "precision" else NP[p["dtype"]]
    cast = "float32" if bug == "precision" else ""
    r = p["radius"]
    head = f'''"""{p["dim"]}-D stencil: a tile and its halo staged in shared memory."""

import numpy as np
from numba import cuda, float32, float64

R = {r}


{_bidx(mode)}'''
    if p["dim"] == 1:
        end = "n - n % 32" if bug == "tail" else "n"
        terms = "\n            ".join(_terms(p, "s[tid + R + ({b})]", bug, cast))
        return (
            head
            + f"""
BLOCK = 128


@cuda.jit
def _stencil(x, y):
    s = cuda.shared.array(BLOCK + 2 * R, dtype={dt})
    n = x.shape[0]
    tid = cuda.threadIdx.x
    base = cuda.blockIdx.x * BLOCK
    while base < n:
        t = tid
        while t < BLOCK + 2 * R:
            k = bidx(base - R + t, n)
            s[t] = 0.0 if k < 0 else x[k]
            t += BLOCK
        cuda.syncthreads()
        i = base + tid
        if i < {end}:
            acc = 0.0
            {terms}
            y[i] = acc
        cuda.syncthreads()
        base += cuda.gridDim.x * BLOCK


def {fn(p)}(x, y):
    n = x.shape[0]
    if n == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    _stencil[min((n + BLOCK - 1) // BLOCK, 4096), BLOCK](dx, dy)
    if host:
        dy.copy_to_host(y)
"""
        )
    end = "cols - cols % 32" if bug == "tail" else "cols"
    terms = "\n                ".join(_terms(p, "s[ty + R + ({a}), tx + R + ({b})]", bug, cast))
    return (
        head
        + f"""
TX = 32
TY = 4


@cuda.jit
def _stencil(x, y):
    s = cuda.shared.array((TY + 2 * R, TX + 2 * R), dtype={dt})
    rows = x.shape[0]
    cols = x.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    by = cuda.blockIdx.y * TY
    while by < rows:
        bx = cuda.blockIdx.x * TX
        while bx < cols:
            a = ty
            while a < TY + 2 * R:
                b = tx
                while b < TX + 2 * R:
                    rr = bidx(by - R + a, rows)
                    cc = bidx(bx - R + b, cols)
                    s[a, b] = 0.0 if rr < 0 or cc < 0 else x[rr, cc]
                    b += TX
                a += TY
            cuda.syncthreads()
            r = by + ty
            c = bx + tx
            if r < rows and c < {end}:
                acc = 0.0
                {terms}
                y[r, c] = acc
            cuda.syncthreads()
            bx += cuda.gridDim.x * TX
        by += cuda.gridDim.y * TY


def {fn(p)}(x, y):
    rows = x.shape[0]
    cols = x.shape[1]
    if rows == 0 or cols == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    grid = (min((cols + TX - 1) // TX, 1024), min((rows + TY - 1) // TY, 65535))
    _stencil[grid, (TX, TY)](dx, dy)
    if host:
        dy.copy_to_host(y)
"""
    )


def baseline(p: Params) -> str:
    if p["dim"] == 1:
        terms = " + ".join(f"{w!r} * at(x, i + ({b}), n)" for _, b, w in taps(p))
        kernel = f"""@cuda.jit(device=True)
def at(x, j, n):
    k = bidx(j, n)
    return 0.0 if k < 0 else x[k]


@cuda.jit
def _naive(x, y):
    # each thread computes 64 consecutive outputs from global memory (uncoalesced)
    n = x.shape[0]
    first = cuda.grid(1) * 64
    for i in range(first, min(first + 64, n)):
        y[i] = {terms}


def {fn(p)}(x, y):
    n = x.shape[0]
    if n == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    threads = (n + 63) // 64
    _naive[(threads + 127) // 128, 128](dx, dy)
    if host:
        dy.copy_to_host(y)
"""
    else:
        terms = " + ".join(
            f"{w!r} * at(x, r + ({a}), c + ({b}), rows, cols)" for a, b, w in taps(p)
        )
        kernel = f"""@cuda.jit(device=True)
def at(x, r, c, rows, cols):
    rr = bidx(r, rows)
    cc = bidx(c, cols)
    return 0.0 if rr < 0 or cc < 0 else x[rr, cc]


@cuda.jit
def _naive(x, y):
    # one thread per output, numbered down the columns (uncoalesced)
    rows = x.shape[0]
    cols = x.shape[1]
    i = cuda.grid(1)
    if i >= rows * cols:
        return
    r = i % rows
    c = i // rows
    y[r, c] = {terms}


def {fn(p)}(x, y):
    rows = x.shape[0]
    cols = x.shape[1]
    if rows * cols == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    _naive[(rows * cols + 127) // 128, 128](dx, dy)
    if host:
        dy.copy_to_host(y)
"""
    return f'''"""Naive baseline: every tap read from global memory."""

import numpy as np
from numba import cuda


{_bidx(p["boundary"])}

{kernel}'''


def io(p: Params) -> Io:
    return Io(fn(p), (Arg("x", p["dtype"]), Arg("y", p["dtype"], "out")), sizes_of(p))


def _prompt(p: Params) -> str:
    dt = NP[p["dtype"]]
    comp = "double" if p["dtype"] == "f64" else "float"
    if p["dim"] == 1:
        what = f"`x` and `y` are 1-D arrays of length `n`; `y[i] = {taps_text(p)}` for every `i`"
        perf = f"{PERF_1D[0]} elements"
    else:
        what = (f"`x` and `y` are 2-D arrays of shape `(rows, cols)`; `y[r][c] = {taps_text(p)}` "
                "for every `(r, c)`")  # fmt: skip
        perf = f"{PERF_2D[0]} x {PERF_2D[1]} arrays"
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {fn(p)}(x, y) -> None
```

- {what} (C-contiguous `{dt}` arrays). Boundary: {boundary_text(p["boundary"])}{" (per axis)" if p["dim"] == 2 else ""}.
  Do not modify `x`.
- Sizes: any size, 0 included (nothing to do); arrays shorter than the stencil and sizes that
  are not multiples of any block size are tested (small on numba-cuda's simulator); inputs are
  uniform in [-2, 2]. The benchmark times {CALLS} calls on {perf}, each with its own input.

{tolerance_text(p, comp)}

{py.closing(fn(p))}
"""


class PyStencil(Family):
    name = "py-stencil"
    slug = "pysten"
    problem_type = "cuda_python"
    group = "cuda-python"
    weight = 1.2
    params_space = SPACE
    limits = {"dtype": DTYPES}

    def render(self, p: Params, task_id: str) -> Parts:
        return py_parts(self.name, p, task_id, io=io(p), module="stencil", cases=py_cases(p),
                        prompt=_prompt(p), reference=reference(p), baseline=baseline(p),
                        difficulty=difficulty(p),  # type: ignore[arg-type]
                        tags=["numba", "stencil", f"stencil-{p['dim']}d", p["boundary"], p["dtype"]],
                        work=work(p, 8 if p["dtype"] == "f64" else 4), forbidden=FORBIDDEN)  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        def m(name: str, kind: str, why: str, bug: str) -> Mutant:
            return Mutant(name, kind, why, {"solution.py": reference(p, bug)})  # type: ignore[arg-type]

        out = [
            m("tail", "tail", "skips the last (size mod 32) outputs of every row", "tail"),
            m(
                "boundary",
                "boundary",
                f"uses the {WRONG_BOUNDARY[p['boundary']]} boundary",
                "boundary",
            ),
            m("operator", "operator", "the first tap's weight has the wrong sign", "operator"),
        ]
        if p["dtype"] == "f64":
            out.append(m("precision", "accumulation", "sums in float32", "precision"))
        return out
