"""py-permute (numba-cuda): the permute family's tensor permutations (NumPy's
``transpose(perm)`` written to a fresh C-contiguous array) for float32, float64 and int32."""

from __future__ import annotations

from cudaenv.families import py
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import py_parts
from cudaenv.families.permute_ops import CALLS, DIMS, PERF, SPACE, difficulty, py_cases, tiled, work
from cudaenv.families.runners import Arg, Io

DTYPES = {"f32": "float32", "f64": "float64", "i32": "int32"}
FORBIDDEN = ["numpy.transpose", "numpy.moveaxis", "numpy.swapaxes", "numpy.ascontiguousarray",
             "numpy.copy", "numpy.einsum"]  # fmt: skip


def fn(perm: list[int]) -> str:
    return "permute_" + "".join(map(str, perm))


def _split(axes: list[int], index: str, dims: str, indent: str) -> str:
    """Lines giving c<q> for each axis q in ``axes`` from ``index`` (the last axis fastest)."""
    lines = [f"rem = {index}"]
    for q in reversed(axes):
        lines += [f"c{q} = rem % {dims}[{q}]", f"rem //= {dims}[{q}]"]
    return ("\n" + indent).join(lines)


def reference(p: Params, *, perm: list[int] | None = None, bug: str | None = None) -> str:
    perm = perm or p["perm"]
    n = len(perm)
    xi = ", ".join(f"c{q}" for q in range(n))
    yi = ", ".join(f"c{q}" for q in perm)
    if not tiled(perm):
        lead = perm[:-1]
        rows = " * ".join(f"s[{q}]" for q in lead)
        if bug == "boundary":
            rows = f"({rows} - ({rows}) // s[{perm[0]}])"
        end = f"s[{n - 1}] - s[{n - 1}] % 32" if bug == "tail" else f"s[{n - 1}]"
        kernel = f"""
@cuda.jit
def _copy_rows(x, y):
    # The innermost axis stays innermost: each output row is a copy of an input row.
    s = x.shape
    rows = {rows}
    row = cuda.blockIdx.y
    while row < rows:
        {_split(lead, "row", "s", "        ")}
        c{n - 1} = cuda.blockIdx.x * 128 + cuda.threadIdx.x
        while c{n - 1} < {end}:
            y[{yi}] = x[{xi}]
            c{n - 1} += cuda.gridDim.x * 128
        row += cuda.gridDim.y


def _launch(x, y):
    s = x.shape
    rows = {" * ".join(f"s[{q}]" for q in lead)}
    _copy_rows[(min((s[{n - 1}] + 127) // 128, 64), min(rows, 65535)), 128](x, y)
"""
    else:
        a, last = perm[-1], n - 1
        others = [q for q in range(n) if q not in (a, last)]
        nz = " * ".join(["1", *(f"s[{q}]" for q in others)])
        loop_nz = f"({nz} - 1)" if bug == "boundary" else nz
        end = f"s[{last}] - s[{last}] % 32" if bug == "tail" else f"s[{last}]"
        kernel = f"""
@cuda.jit
def _tile(x, y):
    # 32x32 tiles of the plane (input axis {a}, input axis {last}) through shared memory: read
    # along axis {last} (the input's innermost), written along axis {a} (the output's).
    tile = cuda.shared.array((32, 33), dtype=@DT@)
    s = x.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    z = cuda.blockIdx.z
    while z < {loop_nz}:
        {_split(others, "z", "s", "        ")}
        for k in range(0, 32, 4):
            c{a} = cuda.blockIdx.y * 32 + ty + k
            c{last} = cuda.blockIdx.x * 32 + tx
            if c{a} < s[{a}] and c{last} < {end}:
                tile[ty + k, tx] = x[{xi}]
        cuda.syncthreads()
        for k in range(0, 32, 4):
            c{a} = cuda.blockIdx.y * 32 + tx
            c{last} = cuda.blockIdx.x * 32 + ty + k
            if c{a} < s[{a}] and c{last} < {end}:
                y[{yi}] = tile[tx, ty + k]
        cuda.syncthreads()
        z += cuda.gridDim.z


def _launch(x, y):
    s = x.shape
    nz = {nz}
    _tile[((s[{last}] + 31) // 32, (s[{a}] + 31) // 32, min(nz, 65535)), (32, 4)](x, y)
"""
    dt = DTYPES[p["dtype"]]
    return f'''"""y = x.transpose({tuple(p["perm"])}), written to a C-contiguous array."""

import numpy as np
from numba import cuda, float32, float64, int32
{kernel.replace("@DT@", dt)}

def {fn(p["perm"])}(x, y):
    if x.size == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    _launch(dx, dy)
    if host:
        dy.copy_to_host(y)
'''


def baseline(p: Params) -> str:
    perm, n = p["perm"], len(p["perm"])
    return f'''"""Naive baseline: one thread per input element (in input order) writes it to its place."""

import numpy as np
from numba import cuda


@cuda.jit
def _naive(x, y, total):
    i = cuda.grid(1)
    if i >= total:
        return
    s = x.shape
    {_split(list(range(n)), "i", "s", "    ")}
    y[{", ".join(f"c{q}" for q in perm)}] = x[{", ".join(f"c{q}" for q in range(n))}]


def {fn(perm)}(x, y):
    total = x.size
    if total == 0:
        return
    host = isinstance(y, np.ndarray)
    dx = cuda.to_device(x) if host else x
    dy = cuda.to_device(y) if host else y
    _naive[(total + 255) // 256, 256](dx, dy, total)
    if host:
        dy.copy_to_host(y)
'''


def io(p: Params) -> Io:
    args = (Arg("x", p["dtype"]), Arg("y", p["dtype"], "out"))
    return Io(fn(p["perm"]), args, DIMS[: len(p["perm"])])


def _prompt(p: Params) -> str:
    perm, n = p["perm"], len(p["perm"])
    dt = DTYPES[p["dtype"]]
    return f"""Write `solution.py` defining, with numba-cuda (`from numba import cuda`):

```python
def {fn(perm)}(x, y) -> None
```

- `x` is a C-contiguous {n}-D `{dt}` array; write into `y` (C-contiguous, shape
  `tuple(x.shape[q] for q in {tuple(perm)})`) the permutation `x.transpose({tuple(perm)})`:
  `y[i0, ..., i{n - 1}] = x[j0, ..., j{n - 1}]` with `j[perm[k]] = i[k]`. Do not modify `x`.
- Sizes: any dimension may be 0 (nothing to do), 1, or not a multiple of 32 (small on
  numba-cuda's simulator); the benchmark times {CALLS} calls on `{" x ".join(map(str, PERF[n]))}`
  device arrays.

Checking is exact (a permutation only moves values).

{py.closing(fn(perm))}
"""


class PyPermute(Family):
    name = "py-permute"
    slug = "pyperm"
    problem_type = "cuda_python"
    group = "cuda-python"
    params_space = SPACE
    limits = {"dtype": tuple(DTYPES)}

    def render(self, p: Params, task_id: str) -> Parts:
        return py_parts(self.name, p, task_id, io=io(p), module="permute", cases=py_cases(p),
                        prompt=_prompt(p), reference=reference(p), baseline=baseline(p),
                        difficulty=difficulty(p),  # type: ignore[arg-type]
                        tags=["numba", "permutation", "transpose", p["dtype"]],
                        work=work(p), forbidden=FORBIDDEN)  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        perm = p["perm"]
        other = [perm[1], perm[0], *perm[2:]]
        return [
            Mutant("tail", "tail", "skips the last (innermost size mod 32) input columns",
                   {"solution.py": reference(p, bug="tail")}),
            Mutant("axis", "axis", f"permutes by {tuple(other)} instead",
                   {"solution.py": reference(p, perm=other)}),
            Mutant("boundary", "boundary", "skips the last slice of the outer axes",
                   {"solution.py": reference(p, bug="boundary")}),
        ]  # fmt: skip
