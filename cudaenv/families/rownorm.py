"""rownorm (cuda_cpp): row-wise softmax, log-softmax, layernorm and RMSNorm (with or without
affine parameters, several epsilons and softmax scales) over float, double, or half with
float statistics; the benchmark's row length is short, medium or long."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import cpp_parts
from cudaenv.families.rownorm_ops import (
    CALLS,
    FN,
    REGIMES,
    SIZES,
    SPACE,
    cpp_cases,
    difficulty,
    formula,
    tolerance_text,
    work,
)
from cudaenv.families.rownorm_src import _extras, baseline, signature
from cudaenv.families.runners import Arg, Io


def _body(p: Params, end: str, bug: str | None) -> str:
    kind, s = p["kind"], f"(C){p['scale']!r}"
    loop = f"for (int j = lane; j < {end}; j += width)"
    aff = "".join(
        {"gamma": " v = v * LD(gamma[j]);", "beta": " v = v + LD(beta[j]);"}[e] for e in _extras(p)
    )
    if kind in ("softmax", "logsoftmax"):
        m = (
            "const C m = (C)0;"
            if bug == "operator"
            else f"C m = -INFINITY;\n        {loop} m = fmax(m, LD(xr[j]));\n        m = team_max<kBlock>(m);"
        )
        out = (
            f"const C inv = (C)1 / s;\n        {loop} yr[j] = ST(exp({s} * (LD(xr[j]) - m)) * inv);"
            if kind == "softmax"
            else f"const C L = log(s);\n        {loop} yr[j] = ST({s} * (LD(xr[j]) - m) - L);"
        )
        return f"""        {m}
        C s = 0;
        {loop} s += exp({s} * (LD(xr[j]) - m));
        s = team_sum<kBlock>(s);
        {out}"""
    eps = f"(C){p['eps']!r}"
    if kind == "layernorm":
        centre = "LD(xr[j])" if bug == "operator" else "(LD(xr[j]) - mu)"
        return f"""        C sum = 0;
        {loop} sum += LD(xr[j]);
        const C mu = team_sum<kBlock>(sum) / (C)cols;
        C sq = 0;
        {loop} {{ const C d = LD(xr[j]) - mu; sq += d * d; }}
        const C rstd = (C)1 / sqrt(team_sum<kBlock>(sq) / (C)cols + {eps});
        {loop} {{ C v = {centre} * rstd;{aff} yr[j] = ST(v); }}"""
    root = (
        "(team_sum<kBlock>(sq) / (C)cols + {e})"
        if bug == "operator"
        else "sqrt(team_sum<kBlock>(sq) / (C)cols + {e})"
    )
    return f"""        C sq = 0;
        {loop} {{ const C v = LD(xr[j]); sq += v * v; }}
        const C rinv = (C)1 / {root.format(e=eps)};
        {loop} {{ C v = LD(xr[j]) * rinv;{aff} yr[j] = ST(v); }}"""


def reference(p: Params, ct: cpp.CType, bug: str | None = None) -> str:
    comp = "double" if ct.key == "f64" else "float"
    narrow = (
        "(C)(int)v"
        if bug == "narrow" and ct.key != "f64"
        else "(C)(float)v"
        if bug == "narrow"
        else "v"
    )
    sync = (
        "" if bug == "no-sync" else "        __syncthreads();  // every warp's partial is in part\n"
    )
    end = "(cols & ~31)" if bug == "tail" else "cols"
    extra = "".join(f"const T* __restrict__ {e}, " for e in _extras(p))
    args = "".join(f"{e}, " for e in _extras(p))
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{FN[p["kind"]]}.h"

// {p["kind"]} of every row: a warp per row for rows of up to 1024 elements, else a block.
typedef {ct.dev} T;
typedef {comp} C;
constexpr int kThreads = 256, kWarps = kThreads / 32;
#define LD(v) ((C){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}

__device__ __forceinline__ C narrow(C v) {{ return {narrow}; }}

// The sum over the team (a warp, or with kBlock the block), in every thread.
template <bool kBlock> __device__ __forceinline__ C team_sum(C v) {{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (kBlock) {{
        __shared__ C part[kWarps];
        __syncthreads();  // the previous reduction has read part
        if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
{sync}        v = part[0];
        for (int w = 1; w < kWarps; ++w) v += part[w];
    }}
    return narrow(v);
}}

template <bool kBlock> __device__ __forceinline__ C team_max(C v) {{
    for (int off = 16; off > 0; off >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (kBlock) {{
        __shared__ C part[kWarps];
        __syncthreads();
        if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
        __syncthreads();
        v = part[0];
        for (int w = 1; w < kWarps; ++w) v = fmax(v, part[w]);
    }}
    return v;
}}

template <bool kBlock> __global__ void __launch_bounds__(kThreads)
rows_kernel(const T* __restrict__ x, {extra}T* __restrict__ y, int rows, int cols) {{
    const int lane = kBlock ? (int)threadIdx.x : (int)(threadIdx.x & 31);
    const int width = kBlock ? kThreads : 32;
    const int first = kBlock ? (int)blockIdx.x : (int)(blockIdx.x * kWarps + (threadIdx.x >> 5));
    const int step = kBlock ? (int)gridDim.x : (int)(gridDim.x * kWarps);
    for (int r = first; r < rows; r += step) {{
        const T* xr = x + (size_t)r * cols;
        T* yr = y + (size_t)r * cols;
{_body(p, end, bug)}
    }}
}}

{signature(p, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    if (cols <= 1024) {{
        int blocks = (rows + kWarps - 1) / kWarps;
        if (blocks > (1 << 20)) blocks = 1 << 20;
        rows_kernel<false><<<blocks, kThreads>>>(x, {args}y, rows, cols);
    }} else {{
        const int blocks = rows < (1 << 20) ? rows : (1 << 20);
        rows_kernel<true><<<blocks, kThreads>>>(x, {args}y, rows, cols);
    }}
}}
"""


def io(p: Params, ct: cpp.CType) -> Io:
    args = (Arg("x", ct.key), *(Arg(e, ct.key) for e in _extras(p)), Arg("y", ct.key, "out"))
    ins = "".join(f"@{e}@, " for e in _extras(p))
    return Io(FN[p["kind"]], args, SIZES, f"{FN[p['kind']]}(@x@, {ins}@y@, rows, cols)")


def prompt(p: Params, ct: cpp.CType) -> str:
    header = f"include/{FN[p['kind']]}.h"
    acc = "double" if ct.key == "f64" else "float"
    extras = f" `{'`, `'.join(_extras(p))}` are vectors of `cols` elements." if _extras(p) else ""
    rows, cols = REGIMES[p["regime"]]
    inputs = {"softmax": "uniform in [-5, 5], rows shifted by multiples of 1000 (exponentiating without subtracting the row maximum overflows, even in double), and constant rows",
              "layernorm": "uniform in [-5, 5], rows around 4 (within +-1), and constant rows (variance 0)"}  # fmt: skip
    return f"""Implement a row-wise {p["kind"]} on the GPU. The interface is declared in `{header}`:

```c++
{signature(p, ct)};
```

- `x` and `y` are `rows x cols` row-major matrices of {ct.label} values in device memory
  (non-overlapping).{extras} For every row `r`: {formula(p)}.
- {"Read halves, compute the statistics and the result in float, round the result to half." if ct.key == "f16" else f"Compute in {acc}."}
- Sizes: `rows >= 0` (nothing to do when 0), `cols >= 1`, `rows * cols < 2^31`. Rows may
  be very short (1 or 3 columns, tens of thousands of rows) or very long (2^18 columns). The
  inputs are {inputs["layernorm" if p["kind"] in ("layernorm", "rmsnorm") else "softmax"]}.
  The benchmark times {CALLS} calls on {rows} x {cols} matrices, each with its own inputs.
- `y`'s previous contents are garbage (NaN). Do not write outside it and do not modify the
  inputs.

{tolerance_text(p, acc)}

{cpp.closing(header)}
"""


class RowNorm(Family):
    name = "rownorm"
    slug = "rown"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[p["dtype"]]
        return cpp_parts(self.name, p, task_id, header=f"{FN[p['kind']]}.h",
                         declaration=signature(p, ct),
                         comment=f"Row-wise {p['kind']} (see the task statement).",
                         includes=[ct.include], io=io(p, ct), module="rownorm", cases=cpp_cases(p),
                         prompt=prompt(p, ct), reference=reference(p, ct), baseline=baseline(p, ct),
                         difficulty=difficulty(p),  # type: ignore[arg-type]
                         tags=["normalization", p["kind"], "reduction", p["dtype"], "memory-bound"],
                         work=work(p, ct.size))  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        ct = cpp.CTYPES[p["dtype"]]
        why = {"softmax": "does not subtract the row maximum",
               "logsoftmax": "does not subtract the row maximum",
               "layernorm": "does not subtract the mean from the output",
               "rmsnorm": "forgets the square root"}[p["kind"]]  # fmt: skip

        def m(name: str, kind: str, text: str, bug: str, det: bool = True) -> Mutant:
            return Mutant(name, kind, text, {"solution.cu": reference(p, ct, bug)}, det)  # type: ignore[arg-type]

        return [
            m("tail", "tail", "skips the last cols mod 32 elements of every row", "tail"),
            m("operator", "operator", why, "operator"),
            m("narrow", "accumulation", "row statistics truncated to a narrower type", "narrow"),
            m("no-sync", "sync", "no barrier between writing the warps' partials and reading them",
              "no-sync", det=False),
        ]  # fmt: skip
