#include <cuda_runtime.h>
#include "layernorm.h"

// One block per row, two passes over the row: the mean is reduced first, then the sum of
// squared deviations from it (no cancellation, unlike E[x^2] - E[x]^2), then the row is
// normalised. The row is re-read from L1/L2 in passes 2 and 3.
constexpr int kThreads = 256;

__device__ __forceinline__ float block_sum(float v, float* scratch) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < kThreads / 32) ? scratch[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) scratch[kThreads / 32] = v;
    }
    __syncthreads();
    float total = scratch[kThreads / 32];
    __syncthreads();  // scratch may be reused right after
    return total;
}

__global__ void __launch_bounds__(kThreads)
layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                 const float* __restrict__ beta, float* __restrict__ y, int rows, int cols,
                 float eps) {
    __shared__ float scratch[kThreads / 32 + 1];
    const float n = (float)cols;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + (size_t)r * cols;
        float* yr = y + (size_t)r * cols;
        float s = 0.f;
        for (int j = threadIdx.x; j < cols; j += kThreads) s += xr[j];
        const float mean = block_sum(s, scratch) / n;
        float q = 0.f;
        for (int j = threadIdx.x; j < cols; j += kThreads) {
            float d = xr[j] - mean;
            q = fmaf(d, d, q);
        }
        const float var = block_sum(q, scratch) / n;
        const float rstd = rsqrtf(var + eps);
        for (int j = threadIdx.x; j < cols; j += kThreads)
            yr[j] = fmaf((xr[j] - mean) * rstd, gamma[j], beta[j]);
    }
}

void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y,
                    int rows, int cols, float eps) {
    if (rows <= 0 || cols <= 0) return;
    int grid = rows < 65536 * 4 ? rows : 65536 * 4;
    layernorm_kernel<<<grid, kThreads>>>(x, gamma, beta, y, rows, cols, eps);
}
