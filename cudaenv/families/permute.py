"""permute (cuda_cpp): a tensor permutation (NumPy's ``transpose(perm)``) of a 2-, 3- or 4-D
row-major array of float, double, half or int; exact. The reference copies rows when the
innermost axis stays innermost and transposes 32x32 shared-memory tiles otherwise."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import cpp_parts
from cudaenv.families.permute_ops import (
    CALLS,
    DIMS,
    PERF,
    SPACE,
    cpp_cases,
    difficulty,
    in_strides,
    name,
    out_shape_text,
    out_strides,
    tiled,
    work,
)
from cudaenv.families.runners import Arg, Io

TYPES = {**cpp.CTYPES, "i32": cpp.INT32}


def signature(perm: list[int], ct: cpp.CType) -> str:
    dims = ", ".join(f"int {d}" for d in DIMS[: len(perm)])
    return f"void {name(perm)}(const {ct.dev}* x, {ct.dev}* y, {dims})"


def _decompose(axes: list[int], index: str, strides: list[tuple[list[str], str]]) -> str:
    """Lines splitting ``index`` into coordinates of ``axes`` (the last fastest) and adding
    each coordinate times its stride to every (accumulator, strides) pair."""
    lines = [f"size_t rem = {index};"]
    for q in reversed(axes):
        lines.append(f"{{ const size_t cq = rem % (size_t){DIMS[q]}; rem /= (size_t){DIMS[q]};")
        lines += [f"  {acc} += cq * ({st[q]});" for st, acc in strides]
        lines.append("}")
    return "\n            ".join(lines)


def _kernels(perm: list[int], bug: str | None) -> tuple[str, str]:
    n = len(perm)
    sx, oy = in_strides(n), out_strides(perm)
    dims = ", ".join(f"int {d}" for d in DIMS[:n])
    args = ", ".join(DIMS[:n])
    if not tiled(perm):
        lead = perm[:-1]
        rows = "*".join(f"(size_t){DIMS[q]}" for q in lead)
        if bug == "boundary":
            rows = f"({rows} - {rows} / (size_t){DIMS[perm[0]]})"
        end = f"({DIMS[n - 1]} & ~31)" if bug == "tail" else DIMS[n - 1]
        dec = _decompose(lead, "row", [(sx, "xo")])
        kern = f"""// Rows of the innermost axis stay contiguous: each output row is a copy of an input row.
__global__ void __launch_bounds__(256) copy_rows(const T* __restrict__ x, T* __restrict__ y, {dims}) {{
    const size_t rows = {rows};
    for (size_t row = blockIdx.y; row < rows; row += gridDim.y) {{
        size_t xo = 0;
        {{
            {dec}
        }}
        for (int j = blockIdx.x * 256 + threadIdx.x; j < {end}; j += gridDim.x * 256)
            y[row * (size_t){DIMS[n - 1]} + j] = x[xo + j];
    }}
}}
"""
        launch = f"""    const size_t rows = {"*".join(f"(size_t){DIMS[q]}" for q in lead)};
    int gx = ({DIMS[n - 1]} + 255) / 256;
    if (gx > 64) gx = 64;
    const unsigned gy = rows < 65535 ? (unsigned)rows : 65535u;
    copy_rows<<<dim3(gx, gy), 256>>>(x, y, {args});"""
        return kern, launch
    a, last = perm[-1], n - 1
    others = [q for q in range(n) if q not in (a, last)]
    nz = "*".join(["(size_t)1", *(f"(size_t){DIMS[q]}" for q in others)])
    nz_loop = f"({nz} - 1)" if bug == "boundary" else nz
    end = f"({DIMS[last]} & ~31)" if bug == "tail" else DIMS[last]
    sync = "" if bug == "no-sync" else "        __syncthreads();\n"
    dec = _decompose(others, "z", [(sx, "bx"), (oy, "by")]) if others else "(void)z;"
    kern = f"""// 32x32 tiles of the plane (input axis {a}, input axis {last}): read along axis {last} (the
// input's innermost), written along axis {a} (the output's innermost) through shared memory.
__global__ void __launch_bounds__(256) tile_kernel(const T* __restrict__ x, T* __restrict__ y, {dims}) {{
    __shared__ T tile[32][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int cl0 = blockIdx.x * 32, ca0 = blockIdx.y * 32;
    for (size_t z = blockIdx.z; z < {nz_loop}; z += gridDim.z) {{
        size_t bx = 0, by = 0;
        {{
            {dec}
        }}
        for (int k = 0; k < 32; k += 8) {{
            const int ca = ca0 + ty + k, cl = cl0 + tx;
            if (ca < {DIMS[a]} && cl < {end}) tile[ty + k][tx] = x[bx + (size_t)ca * ({sx[a]}) + cl];
        }}
{sync}        for (int k = 0; k < 32; k += 8) {{
            const int ca = ca0 + tx, cl = cl0 + ty + k;
            if (ca < {DIMS[a]} && cl < {end}) y[by + (size_t)cl * ({oy[last]}) + ca] = tile[tx][ty + k];
        }}
        __syncthreads();  // the tile is reused for the next z
    }}
}}
"""
    launch = f"""    const size_t nz = {nz};
    const unsigned gz = nz < 65535 ? (unsigned)nz : 65535u;
    tile_kernel<<<dim3(({DIMS[last]} + 31) / 32, ({DIMS[a]} + 31) / 32, gz), dim3(32, 8)>>>(x, y, {args});"""
    return kern, launch


def reference(p: Params, *, perm: list[int] | None = None, bug: str | None = None) -> str:
    """solution.cu: the reference, or (a ``perm`` of another order, a ``bug``) a mutant."""
    ct = TYPES[p["dtype"]]
    n = len(p["perm"])
    kern, launch = _kernels(perm or p["perm"], bug)
    empty = " || ".join(f"{d} <= 0" for d in DIMS[:n])
    return f"""#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{name(p["perm"])}.h"

typedef {ct.dev} T;

{kern}
{signature(p["perm"], ct)} {{
    if ({empty}) return;
{launch}
}}
"""


def baseline(p: Params) -> str:
    ct = TYPES[p["dtype"]]
    perm, n = p["perm"], len(p["perm"])
    dims = ", ".join(f"int {d}" for d in DIMS[:n])
    args = ", ".join(DIMS[:n])
    total = "*".join(f"(size_t){d}" for d in DIMS[:n])
    dec = _decompose(list(range(n)), "i", [(out_strides(perm), "yo")])
    return f"""#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{name(perm)}.h"

// Naive baseline: one thread per input element (in input order) computes where it goes.
typedef {ct.dev} T;

__global__ void naive(const T* x, T* y, {dims}, size_t n) {{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    size_t yo = 0;
    {{
        {_decompose(list(range(n)), "i", [(out_strides(perm), "yo")]) if dec else ""}
    }}
    y[yo] = x[i];
}}

{signature(perm, ct)} {{
    const size_t n = {total};
    if (n == 0) return;
    naive<<<(unsigned)((n + 255) / 256), 256>>>(x, y, {args}, n);
}}
"""


def io(p: Params) -> Io:
    n = len(p["perm"])
    dims = ", ".join(DIMS[:n])
    args = (Arg("x", p["dtype"]), Arg("y", p["dtype"], "out"))
    return Io(name(p["perm"]), args, DIMS[:n], f"{name(p['perm'])}(@x@, @y@, {dims})")


def prompt(p: Params, ct: cpp.CType) -> str:
    perm, n = p["perm"], len(p["perm"])
    header = f"include/{name(perm)}.h"
    shape = "(" + ", ".join(DIMS[:n]) + ")"
    perf = " x ".join(map(str, PERF[n]))
    return f"""Implement a tensor permutation on the GPU. The interface is declared in `{header}`:

```c++
{signature(perm, ct)};
```

- `x` is a row-major array of shape `{shape}` of {ct.label} values in device memory; `y`
  (device memory, not overlapping `x`) receives `x` with its axes permuted by
  `perm = {tuple(perm)}`: `y` has shape `{out_shape_text(perm)}` and
  `y[i0, ..., i{n - 1}] = x[j0, ..., j{n - 1}]` with `j[perm[k]] = i[k]` (NumPy's
  `x.transpose({tuple(perm)})`, stored row-major).
- Sizes: every dimension `>= 0` (nothing to do when one is 0), fewer than 2^31 elements. The
  tests cover single elements, dimensions of 1 and dimensions that are not multiples of 32;
  the benchmark times {CALLS} calls on `{perf}` arrays, each with its own input.
- `y`'s previous contents are garbage. Do not write outside it and do not modify `x`.

Checking is exact (a permutation only moves values).

{cpp.closing(header)}
"""


class Permute(Family):
    name = "permute"
    slug = "perm"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = TYPES[p["dtype"]]
        return cpp_parts(self.name, p, task_id, header=f"{name(p['perm'])}.h",
                         declaration=signature(p["perm"], ct),
                         comment=f"y = x.transpose({tuple(p['perm'])}) (see the task statement).",
                         includes=[ct.include], io=io(p), module="permute", cases=cpp_cases(p),
                         prompt=prompt(p, ct), reference=reference(p), baseline=baseline(p),
                         difficulty=difficulty(p),  # type: ignore[arg-type]
                         tags=["permutation", "transpose", p["dtype"], "memory-bound"]
                         + (["shared-memory"] if tiled(p["perm"]) else []),
                         work=work(p))  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        perm = p["perm"]
        other = [perm[1], perm[0], *perm[2:]]

        def m(nm: str, kind: str, why: str, det: bool = True, **kw: object) -> Mutant:
            return Mutant(nm, kind, why, {"solution.cu": reference(p, **kw)}, det)  # type: ignore[arg-type]

        out = [
            m("tail", "tail", "skips the last (innermost size mod 32) input columns", bug="tail"),
            m("axis", "axis", f"permutes by {tuple(other)} instead", perm=other),
            m("boundary", "boundary", "skips the last slice of the outer axes", bug="boundary"),
        ]
        if tiled(perm):
            out.append(m("no-sync", "sync", "no barrier between filling the tile and reading it",
                         det=False, bug="no-sync"))  # fmt: skip
        return out
