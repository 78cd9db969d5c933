#include <cuda_runtime.h>
#include "sgemm.h"

// Naive baseline: one thread per element of C, operands read straight from global memory.
__global__ void sgemm_naive(int M, int N, int K, const float* A, const float* B, float* C) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)i * K + k] * B[(size_t)k * N + j];
    C[(size_t)i * N + j] = acc;
}

void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    if (M <= 0 || N <= 0) return;
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    sgemm_naive<<<grid, block>>>(M, N, K, A, B, C);
}
