#include <cuda_runtime.h>
#include "reduce_sum.h"

// Two-pass, deterministic reduction:
//   pass 1: each block sums a grid-strided share of x into one partial,
//   pass 2: a single block sums the partials and writes *out.
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

__device__ float g_partials[kMaxBlocks];

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Sum of v over the block; valid in thread 0.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_part[kThreads / 32];
    v = warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    v = (threadIdx.x < kThreads / 32) ? warp_part[threadIdx.x] : 0.0f;
    if (warp == 0) v = warp_sum(v);
    return v;
}

__global__ void __launch_bounds__(kThreads) partial_sums(const float* __restrict__ x, int n) {
    // Four independent accumulators keep several loads in flight per thread.
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    long long stride = (long long)gridDim.x * kThreads;
    long long i = (long long)blockIdx.x * kThreads + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        a0 += x[i];
        a1 += x[i + stride];
        a2 += x[i + 2 * stride];
        a3 += x[i + 3 * stride];
    }
    for (; i < n; i += stride) a0 += x[i];
    float s = block_sum((a0 + a1) + (a2 + a3));
    if (threadIdx.x == 0) g_partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kThreads) final_sum(int nparts, float* out) {
    float v = 0.f;
    for (int i = threadIdx.x; i < nparts; i += kThreads) v += g_partials[i];
    v = block_sum(v);
    if (threadIdx.x == 0) *out = v;
}

void reduce_sum(const float* x, int n, float* out) {
    if (n < 0) n = 0;
    int blocks = (int)(((long long)n + 4LL * kThreads - 1) / (4LL * kThreads));
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    if (blocks < 1) blocks = 1;
    partial_sums<<<blocks, kThreads>>>(x, n);
    final_sum<<<1, kThreads>>>(blocks, out);
}
