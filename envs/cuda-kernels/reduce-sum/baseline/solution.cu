#include <cuda_runtime.h>
#include "reduce_sum.h"

// Naive baseline: one thread block walks the whole array, then a shared-memory tree.
__global__ void sum_one_block(const float* x, int n, float* out) {
    __shared__ float s[1024];
    float v = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = s[0];
}

void reduce_sum(const float* x, int n, float* out) {
    sum_one_block<<<1, 1024>>>(x, n < 0 ? 0 : n, out);
}
