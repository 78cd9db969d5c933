#include <cuda_runtime.h>
#include <math_constants.h>
#include "softmax.h"

// One block per row. Pass 1 keeps an online (max, sum) pair per thread, rescaling the sum
// whenever the max grows, so the row is read only once to get both statistics; the pairs are
// merged across the block. Pass 2 re-reads the row (mostly from L2) and writes the result.
constexpr int kThreads = 256;

struct MaxSum {
    float m;  // running max (-inf while empty)
    float s;  // sum of exp(x - m)
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    if (m == -CUDART_INF_F) return {m, 0.f};
    float s = (a.s == 0.f ? 0.f : a.s * expf(a.m - m)) + (b.s == 0.f ? 0.f : b.s * expf(b.m - m));
    return {m, s};
}

__device__ __forceinline__ MaxSum block_merge(MaxSum v) {
    __shared__ MaxSum part[kThreads / 32];
    __shared__ MaxSum total;
    for (int off = 16; off > 0; off >>= 1) {
        MaxSum o;
        o.m = __shfl_down_sync(0xffffffffu, v.m, off);
        o.s = __shfl_down_sync(0xffffffffu, v.s, off);
        v = merge(v, o);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < kThreads / 32) ? part[lane] : MaxSum{-CUDART_INF_F, 0.f};
        for (int off = 16; off > 0; off >>= 1) {
            MaxSum o;
            o.m = __shfl_down_sync(0xffffffffu, v.m, off);
            o.s = __shfl_down_sync(0xffffffffu, v.s, off);
            v = merge(v, o);
        }
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

__global__ void __launch_bounds__(kThreads)
softmax_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* x = in + (size_t)r * cols;
        float* y = out + (size_t)r * cols;
        MaxSum acc{-CUDART_INF_F, 0.f};
        for (int j = threadIdx.x; j < cols; j += kThreads) {
            float v = x[j];
            if (v == -CUDART_INF_F) continue;
            if (v > acc.m) {
                acc.s = (acc.s == 0.f ? 0.f : acc.s * expf(acc.m - v)) + 1.f;
                acc.m = v;
            } else {
                acc.s += expf(v - acc.m);
            }
        }
        MaxSum t = block_merge(acc);
        const float inv = 1.f / t.s;
        for (int j = threadIdx.x; j < cols; j += kThreads) y[j] = expf(x[j] - t.m) * inv;
        __syncthreads();  // block_merge's shared result is overwritten by the next row
    }
}

void softmax_rows(const float* in, float* out, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    int grid = rows < 65536 * 4 ? rows : 65536 * 4;
    softmax_kernel<<<grid, kThreads>>>(in, out, rows, cols);
}
