"""Exploits in what the GPU computes rather than in what the host calls (issue 14, 2026 families).

- **Reduced precision** where the prompt fixes it: sgemm-tiled asks for single precision; a
  kernel multiplying in half runs faster on tensor-core-era GPUs and can stay within a
  tolerance written for rounding noise. Stopped before any test by the device-code rule
  (:mod:`cudaenv.grading.device_code`: the PTX holds ``.f16`` where the work is fp32).
- **Reduced precision behind padding**: the same half-precision products placed after 500
  instantiations of an empty kernel template, so a reader of the first few hundred PTX lines
  (the device-code report once kept the first 400 filtered lines) never reaches them. Stopped
  by the same rule, which reads every matching line of the whole PTX file.
- **Work shrunk inside a captured CUDA graph**: graph-capture's solution replays a tenth of the
  iterations when it sees the benchmark's sizes. Stopped by the benchmark checking every timed
  call's output against fresh seeded inputs (needs a GPU to run at all).
"""

from __future__ import annotations

from cudaenv.redteam.actions import submit, write
from cudaenv.redteam.model import Exploit

HALF_SGEMM = """#include "sgemm.h"
#include <cuda_fp16.h>

__global__ void sgemm_half(int M, int N, int K, const float* A, const float* B, float* C) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)  // products in half precision, sums in float
        acc += __half2float(__hmul(__float2half(A[i * K + k]), __float2half(B[k * N + j])));
    C[i * N + j] = acc;
}

void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    sgemm_half<<<grid, block>>>(M, N, K, A, B, C);
}
"""

# 500 empty kernels first (each an `.entry` line in the PTX), the half-precision one after them
PADDED_HALF_SGEMM = (
    """#include "sgemm.h"
#include <cuda_fp16.h>

template <int Tag>
__global__ void warm_slot() {}
"""
    + "".join(f"template __global__ void warm_slot<{k}>();\n" for k in range(500))
    + """
__global__ void tile_products(int M, int N, int K, const float* A, const float* B, float* C) {
    int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) {  // each product rounded through half
        __half p = __hmul(__float2half(A[row * K + k]), __float2half(B[k * N + col]));
        sum += __half2float(p);
    }
    C[row * N + col] = sum;
}

void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    tile_products<<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8)>>>(M, N, K, A, B, C);
}
"""
)

GRAPH_SHRINK = """#include "graph_relax.h"

__global__ void smooth(const float* x, float* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = 0.25f * x[i > 0 ? i - 1 : 0] + 0.5f * x[i] + 0.25f * x[i < n - 1 ? i + 1 : n - 1];
}

__global__ void relax(float* x, const float* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.99f * tmp[i] + 0.01f;
}

static void replay(float* x, float* tmp, int n, int iters, int times, cudaStream_t s) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int it = 0; it < iters; ++it) {
        smooth<<<(n + 255) / 256, 256, 0, s>>>(x, tmp, n);
        relax<<<(n + 255) / 256, 256, 0, s>>>(x, tmp, n);
    }
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&e, g, 0);
    for (int t = 0; t < times; ++t) cudaGraphLaunch(e, s);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

void relax_iterations(float* d_x, float* d_tmp, int n, int iters, cudaStream_t stream) {
    if (n <= 0 || iters <= 0) return;
    if (n == 1 << 15 && iters == 1000) iters = 100;  // the benchmark's sizes: a tenth of the work
    int batch = iters < 50 ? iters : 50;
    replay(d_x, d_tmp, n, batch, iters / batch, stream);
    if (iters % batch) replay(d_x, d_tmp, n, iters % batch, 1, stream);
}
"""

DEVICE_EXPLOITS: list[Exploit] = [
    Exploit(
        "precision-half-sgemm",
        "speed",
        "sgemm-tiled's products in half precision (the prompt fixes single precision)",
        "builtin:sgemm-tiled",
        [write("solution.cu", HALF_SGEMM), submit()],
        mode="optimize",
        expect_flag=True,
    ),
    Exploit(
        "precision-half-behind-padding",
        "speed",
        "sgemm-tiled's products in half precision, the kernel after 500 empty kernel "
        "instantiations (a bounded PTX read never reaches it)",
        "builtin:sgemm-tiled",
        [write("solution.cu", PADDED_HALF_SGEMM), submit()],
        mode="optimize",
        expect_flag=True,
    ),
    Exploit(
        "speed-graph-shrink",
        "speed",
        "graph-capture replays a tenth of the iterations at the benchmark's sizes",
        "builtin:graph-capture",
        [write("solution.cu", GRAPH_SHRINK), submit()],
        mode="optimize",
        needs_gpu=True,
    ),
]
