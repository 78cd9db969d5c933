"""CUDA sources of the matmul family: the reference (64x64 output tiles, 16-deep K tiles in
shared memory, 4x4 outputs per thread, any transposes, the epilogue fused), the naive baseline
(one thread per output) and the mutants' bugs."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Params

EPILOGUES = ("none", "bias", "bias_relu", "bias_gelu", "residual", "scale_residual")
GELU_C = 0.7978845608028654  # sqrt(2 / pi)


def extra_input(p: Params) -> str | None:
    return {"none": None, "bias": "bias", "bias_relu": "bias", "bias_gelu": "bias",
            "residual": "D", "scale_residual": "D"}[p["epilogue"]]  # fmt: skip


def fn(p: Params) -> str:
    return (
        "gemm_"
        + ("t" if p["trans_a"] else "n")
        + ("t" if p["trans_b"] else "n")
        + ("" if p["epilogue"] == "none" else "_" + p["epilogue"])
    )


def signature(p: Params, ct: cpp.CType) -> str:
    ex = extra_input(p)
    extra = f"const {ct.dev}* {ex}, " if ex else ""
    return f"void {fn(p)}(const {ct.dev}* A, const {ct.dev}* B, {extra}{ct.dev}* C, int M, int N, int K)"


def a_index(trans: bool) -> str:
    return "(size_t)(k) * M + (m)" if trans else "(size_t)(m) * K + (k)"


def b_index(trans: bool) -> str:
    return "(size_t)(n) * K + (k)" if trans else "(size_t)(k) * N + (n)"


def epilogue(p: Params, v: str) -> str:
    """Device statements turning the product ``v`` (ACC) into the output value, for (m, n)."""
    e = p["epilogue"]
    return {
        "none": "",
        "bias": f"{v} += LD(bias[n]);",
        "bias_relu": f"{v} += LD(bias[n]); {v} = {v} > (ACC)0 ? {v} : (ACC)0;",
        "bias_gelu": f"{v} += LD(bias[n]); {v} = (ACC)0.5 * {v} * ((ACC)1 + tanh((ACC){GELU_C!r} * ({v} + (ACC)0.044715 * {v} * {v} * {v})));",
        "residual": f"{v} += LD(D[(size_t)m * N + n]);",
        "scale_residual": f"{v} = (ACC)0.5 * {v} - (ACC)1.5 * LD(D[(size_t)m * N + n]);",
    }[e]


def reference(p: Params, ct: cpp.CType, bug: str | None = None) -> str:
    acc = "double" if ct.key == "f64" and bug != "precision" else "float"
    ta = (not p["trans_a"]) if bug == "axis" else p["trans_a"]
    k_end = "(K & ~15)" if bug == "k-tail" else "K"
    n_end = "(N & ~31)" if bug == "tail" else "N"
    epi = "" if bug == "no-epilogue" else epilogue(p, "v")
    sync = (
        ""
        if bug == "no-sync"
        else "        __syncthreads();  // the tile is read before the next one is loaded\n"
    )
    ex = extra_input(p)
    extra = f"const T* __restrict__ {ex}, " if ex else ""
    args = f"{ex}, " if ex else ""
    a_load = "mm = idx % 64; kk = idx / 64;" if ta else "mm = idx / 16; kk = idx % 16;"
    b_load = "kk = idx % 16; nn = idx / 16;" if p["trans_b"] else "kk = idx / 64; nn = idx % 64;"
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{fn(p)}.h"

typedef {ct.dev} T;
typedef {acc} ACC;
#define LD(v) ((ACC){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}
constexpr int BM = 64, BN = 64, BK = 16;

// C tile of 64x64 per block of 16x16 threads, each thread 4x4 outputs (rows ty + 16 i, columns
// tx + 16 j); A and B staged 16 deep in shared memory (zero-filled past the edges).
__global__ void __launch_bounds__(256)
gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, {extra}T* __restrict__ C, int M, int N, int K) {{
    __shared__ ACC As[BK][BM + 1];
    __shared__ ACC Bs[BK][BN + 1];
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    ACC acc[4][4] = {{}};
    for (int k0 = 0; k0 < {k_end}; k0 += BK) {{
        for (int l = 0; l < 4; ++l) {{
            const int idx = t + 256 * l;
            int mm, kk, nn;
            {a_load}
            {{ const int m = m0 + mm, k = k0 + kk;
              As[kk][mm] = (m < M && k < K) ? LD(A[{a_index(ta)}]) : (ACC)0; }}
            {b_load}
            {{ const int k = k0 + kk, n = n0 + nn;
              Bs[kk][nn] = (k < K && n < N) ? LD(B[{b_index(p["trans_b"])}]) : (ACC)0; }}
        }}
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {{
            ACC a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
            for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }}
{sync}    }}
    for (int i = 0; i < 4; ++i) {{
        const int m = m0 + ty + 16 * i;
        if (m >= M) continue;
        for (int j = 0; j < 4; ++j) {{
            const int n = n0 + tx + 16 * j;
            if (n >= {n_end}) continue;
            ACC v = acc[i][j];
            {epi}
            C[(size_t)m * N + n] = ST(v);
        }}
    }}
}}

{signature(p, ct)} {{
    if (M <= 0 || N <= 0) return;
    gemm_kernel<<<dim3((N + BN - 1) / BN, (M + BM - 1) / BM), dim3(16, 16)>>>(A, B, {args}C, M, N, K);
}}
"""


def baseline(p: Params, ct: cpp.CType) -> str:
    acc = "double" if ct.key == "f64" else "float"
    ex = extra_input(p)
    extra = f"const T* {ex}, " if ex else ""
    args = f"{ex}, " if ex else ""
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{fn(p)}.h"

// Naive baseline: one thread per output, the dot product read straight from global memory.
typedef {ct.dev} T;
typedef {acc} ACC;
#define LD(v) ((ACC){ct.to_acc("(v)")})
#define ST(v) {ct.from_acc("(" + ct.acc + ")(v)")}

__global__ void naive(const T* A, const T* B, {extra}T* C, int M, int N, int K) {{
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    ACC v = 0;
    for (int k = 0; k < K; ++k) v += LD(A[{a_index(p["trans_a"])}]) * LD(B[{b_index(p["trans_b"])}]);
    {epilogue(p, "v")}
    C[(size_t)m * N + n] = ST(v);
}}

{signature(p, ct)} {{
    if (M <= 0 || N <= 0) return;
    naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, {args}C, M, N, K);
}}
"""
