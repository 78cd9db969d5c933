#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "sgemm_bias.h"

// Fill C with the bias broadcast along the rows; the GEMM then accumulates into it (beta = 1).
__global__ void fill_bias_kernel(const float* __restrict__ bias, float* __restrict__ C,
                                 int m, size_t total) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride)
        C[idx] = bias[idx % (size_t)m];
}

void sgemm_bias(cublasHandle_t handle, int m, int n, int k, float alpha,
                const float* A, const float* B, const float* bias, float* C) {
    if (m <= 0 || n <= 0) return;
    cudaStream_t stream = nullptr;
    cublasGetStream(handle, &stream);
    const size_t total = (size_t)m * (size_t)n;
    const int threads = 256;
    size_t want = (total + threads - 1) / threads;
    int blocks = (int)(want < 65536 ? want : 65536);
    fill_bias_kernel<<<blocks, threads, 0, stream>>>(bias, C, m, total);
    const float beta = 1.0f;
    // k == 0: cuBLAS leaves C (= bias) untouched because beta == 1.
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                A, m, B, k > 0 ? k : 1, &beta, C, m);
}
