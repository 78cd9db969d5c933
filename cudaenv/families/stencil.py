"""stencil (cuda_cpp): a 1-D or 2-D (box or cross) stencil of radius 1 to 3 with fixed dyadic
weights and a boundary mode (clamp, zero, wrap, mirror), over float, double, or half with
float math. The reference stages a tile and its halo in shared memory."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import cpp_parts
from cudaenv.families.runners import Arg, Io
from cudaenv.families.stencil_ops import (
    CALLS,
    PERF_1D,
    PERF_2D,
    SPACE,
    WRONG_BOUNDARY,
    boundary_text,
    cpp_cases,
    difficulty,
    sizes_of,
    taps,
    taps_text,
    tolerance_text,
    work,
)


def fn(p: Params) -> str:
    return f"stencil_{p['dim']}d"


def signature(p: Params, ct: cpp.CType) -> str:
    dims = "int n" if p["dim"] == 1 else "int rows, int cols"
    return f"void {fn(p)}(const {ct.dev}* x, {ct.dev}* y, {dims})"


def bidx(mode: str, name: str = "bidx") -> str:
    """A boundary function: the index read for ``j`` in an axis of ``n`` (-1: reads 0)."""
    body = {
        "clamp": "return j < 0 ? 0 : (j >= n ? n - 1 : j);",
        "zero": "return (j < 0 || j >= n) ? -1 : j;",
        "wrap": "int m = j % n;\n    return m < 0 ? m + n : m;",
        "mirror": "if (n == 1) return 0;\n    const int p = 2 * n - 2;\n    int m = j % p;\n"
        "    if (m < 0) m += p;\n    return m < n ? m : p - m;",
    }[mode]
    return f"__device__ __forceinline__ int {name}(int j, int n) {{\n    {body}\n}}\n"


def _acc(p: Params, src: str, bug: str | None, rounded: bool) -> str:
    """``acc = acc + w * tap`` for every tap (``rounded``: through ``rnd``, the precision bug)."""
    lines = []
    for k, (a, b, w) in enumerate(taps(p)):
        if bug == "operator" and k == 0:
            w = -w
        term = f"acc + (C){w!r} * {src.format(a=a, b=b)}"
        lines.append(f"acc = {'rnd(' + term + ')' if rounded else term};")
    return "\n                ".join(lines)


def reference(p: Params, ct: cpp.CType, bug: str | None = None) -> str:
    comp = "double" if ct.key == "f64" else "float"
    if bug == "precision" and ct.key == "f64":
        comp = "float"
    mode = WRONG_BOUNDARY[p["boundary"]] if bug == "boundary" else p["boundary"]
    r = p["radius"]
    sync = "" if bug == "no-sync" else "        __syncthreads();\n"
    rounded = bug == "precision" and ct.key != "f64"
    rnd = ("__device__ __forceinline__ float rnd(float v) { return __half2float(__float2half_rn(v)); }\n"
           if rounded else "")  # fmt: skip
    half = ct.key == "f16" or rnd
    head = f"""#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if half else ""}
#include "{fn(p)}.h"

typedef {ct.dev} T;
typedef {comp} C;
constexpr int R = {r};
#define LD(v) ((C){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}
{rnd}
// boundary: {p["boundary"]}
{bidx(mode)}"""
    if p["dim"] == 1:
        end = "(n & ~31)" if bug == "tail" else "n"
        return (
            head
            + f"""
constexpr int kBlock = 256;

__device__ __forceinline__ C fetch(const T* x, int j, int n) {{
    const int k = bidx(j, n);
    return k < 0 ? (C)0 : LD(x[k]);
}}

// 256 outputs per block: their inputs and the halo staged in shared memory.
__global__ void __launch_bounds__(kBlock) stencil_kernel(const T* __restrict__ x, T* __restrict__ y, int n) {{
    __shared__ C s[kBlock + 2 * R];
    for (int base = blockIdx.x * kBlock; base < n; base += gridDim.x * kBlock) {{
        for (int t = threadIdx.x; t < kBlock + 2 * R; t += kBlock) s[t] = fetch(x, base - R + t, n);
{sync}        const int i = base + threadIdx.x;
        if (i < {end}) {{
            C acc = 0;
            {_acc(p, "s[threadIdx.x + R + ({b})]", bug, rounded)}
            y[i] = ST(acc);
        }}
        __syncthreads();  // s is refilled for the next base
    }}
}}

{signature(p, ct)} {{
    if (n <= 0) return;
    int blocks = (n + kBlock - 1) / kBlock;
    if (blocks > 4096) blocks = 4096;
    stencil_kernel<<<blocks, kBlock>>>(x, y, n);
}}
"""
        )
    end = "(cols & ~31)" if bug == "tail" else "cols"
    return (
        head
        + f"""
constexpr int TX = 32, TY = 8;

__device__ __forceinline__ C fetch(const T* x, int r, int c, int rows, int cols) {{
    const int rr = bidx(r, rows), cc = bidx(c, cols);
    return (rr < 0 || cc < 0) ? (C)0 : LD(x[(size_t)rr * cols + cc]);
}}

// 32x8 outputs per block: their inputs and the halo staged in shared memory.
__global__ void __launch_bounds__(TX * TY)
stencil_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {{
    __shared__ C s[TY + 2 * R][TX + 2 * R + 1];
    for (int by = blockIdx.y * TY; by < rows; by += gridDim.y * TY) {{
        for (int bx = blockIdx.x * TX; bx < cols; bx += gridDim.x * TX) {{
            for (int ty = threadIdx.y; ty < TY + 2 * R; ty += TY)
                for (int tx = threadIdx.x; tx < TX + 2 * R; tx += TX)
                    s[ty][tx] = fetch(x, by - R + ty, bx - R + tx, rows, cols);
    {sync}            const int r = by + threadIdx.y, c = bx + threadIdx.x;
            if (r < rows && c < {end}) {{
                C acc = 0;
                {_acc(p, "s[threadIdx.y + R + ({a})][threadIdx.x + R + ({b})]", bug, rounded)}
                y[(size_t)r * cols + c] = ST(acc);
            }}
            __syncthreads();  // s is refilled for the next tile
        }}
    }}
}}

{signature(p, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    int gx = (cols + TX - 1) / TX, gy = (rows + TY - 1) / TY;
    if (gx > 1024) gx = 1024;
    if (gy > 65535) gy = 65535;
    stencil_kernel<<<dim3(gx, gy), dim3(TX, TY)>>>(x, y, rows, cols);
}}
"""
    )


def baseline(p: Params, ct: cpp.CType) -> str:
    comp = "double" if ct.key == "f64" else "float"
    head = f"""#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{fn(p)}.h"

typedef {ct.dev} T;
typedef {comp} C;
#define LD(v) ((C){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}
{bidx(p["boundary"])}"""
    terms = " + ".join(
        f"(C){w!r} * "
        + (f"at(x, i + ({b}), n)" if p["dim"] == 1 else f"at(x, r + ({a}), c + ({b}), rows, cols)")
        for a, b, w in taps(p)
    )
    if p["dim"] == 1:
        return (
            head
            + f"""
__device__ __forceinline__ C at(const T* x, int j, int n) {{
    const int k = bidx(j, n);
    return k < 0 ? (C)0 : LD(x[k]);
}}

// Naive baseline: each thread computes 64 consecutive outputs from global memory (the threads
// of a warp read addresses 64 elements apart).
__global__ void naive(const T* x, T* y, int n) {{
    const long long first = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 64;
    for (long long ii = first; ii < first + 64 && ii < n; ++ii) {{
        const int i = (int)ii;
        y[i] = ST({terms});
    }}
}}

{signature(p, ct)} {{
    if (n <= 0) return;
    const long long threads = ((long long)n + 63) / 64;
    naive<<<(unsigned)((threads + 127) / 128), 128>>>(x, y, n);
}}
"""
        )
    return (
        head
        + f"""
__device__ __forceinline__ C at(const T* x, int r, int c, int rows, int cols) {{
    const int rr = bidx(r, rows), cc = bidx(c, cols);
    return (rr < 0 || cc < 0) ? (C)0 : LD(x[(size_t)rr * cols + cc]);
}}

// Naive baseline: one thread per output, threads numbered down the columns (neighbouring
// threads touch addresses a row apart), every tap read from global memory.
__global__ void naive(const T* x, T* y, int rows, int cols) {{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)rows * cols) return;
    const int r = (int)(i % rows), c = (int)(i / rows);
    y[(size_t)r * cols + c] = ST({terms});
}}

{signature(p, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    const long long n = (long long)rows * cols;
    naive<<<(unsigned)((n + 127) / 128), 128>>>(x, y, rows, cols);
}}
"""
    )


def io(p: Params) -> Io:
    dims = ", ".join(sizes_of(p))
    args = (Arg("x", p["dtype"]), Arg("y", p["dtype"], "out"))
    return Io(fn(p), args, sizes_of(p), f"{fn(p)}(@x@, @y@, {dims})")


def prompt(p: Params, ct: cpp.CType) -> str:
    header = f"include/{fn(p)}.h"
    comp = "double" if ct.key == "f64" else "float"
    if p["dim"] == 1:
        what = (f"`x` and `y` are arrays of `n` {ct.label} values; for every `0 <= i < n`, "
                f"`y[i] = {taps_text(p)}`")  # fmt: skip
        sizes, perf = "`n >= 0` (nothing to do when 0)", f"{PERF_1D[0]} elements"
    else:
        what = (f"`x` and `y` are `rows x cols` row-major matrices of {ct.label} values; for every "
                f"`(r, c)`, `y[r][c] = {taps_text(p)}`")  # fmt: skip
        sizes = "`rows, cols >= 0` (nothing to do when either is 0), `rows * cols < 2^31`"
        perf = f"{PERF_2D[0]} x {PERF_2D[1]} matrices"
    return f"""Implement a {p["dim"]}-D stencil on the GPU. The interface is declared in `{header}`:

```c++
{signature(p, ct)};
```

- {what}. Boundary: {boundary_text(p["boundary"])}{" (per axis)" if p["dim"] == 2 else ""}.
- {"Read halves, sum in float, round the result to half." if ct.key == "f16" else f"Compute in {comp}."}
  Both pointers are device pointers and do not overlap; `y`'s previous contents are garbage.
  Do not write outside `y` and do not modify `x`.
- Sizes: {sizes}. The tests cover arrays shorter than the stencil, sizes that are not
  multiples of 32 or of any block size and about a million elements; inputs are uniform in
  [-2, 2]. The benchmark times {CALLS} calls on {perf}, each with its own input.

{tolerance_text(p, comp)}

{cpp.closing(header)}
"""


class Stencil(Family):
    name = "stencil"
    slug = "sten"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[p["dtype"]]
        return cpp_parts(self.name, p, task_id, header=f"{fn(p)}.h", declaration=signature(p, ct),
                         comment=f"y = {taps_text(p)}; boundary {p['boundary']}.",
                         includes=[ct.include], io=io(p), module="stencil", cases=cpp_cases(p),
                         prompt=prompt(p, ct), reference=reference(p, ct), baseline=baseline(p, ct),
                         difficulty=difficulty(p),  # type: ignore[arg-type]
                         tags=["stencil", f"stencil-{p['dim']}d", p["boundary"], p["dtype"], "shared-memory"],
                         work=work(p, ct.size))  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        ct = cpp.CTYPES[p["dtype"]]

        def m(name: str, kind: str, why: str, bug: str, det: bool = True) -> Mutant:
            return Mutant(name, kind, why, {"solution.cu": reference(p, ct, bug)}, det)  # type: ignore[arg-type]

        return [
            m("tail", "tail", "skips the last (size mod 32) outputs of every row", "tail"),
            m("boundary", "boundary", f"uses the {WRONG_BOUNDARY[p['boundary']]} boundary", "boundary"),
            m("operator", "operator", "the first tap's weight has the wrong sign", "operator"),
            m("no-sync", "sync", "no barrier between staging the tile and reading it", "no-sync", False),
        ] + ([] if p["dtype"] == "f16" else [  # (half outputs tolerate about what half sums lose)
            m("precision", "accumulation", "sums in a narrower type", "precision")])  # fmt: skip
