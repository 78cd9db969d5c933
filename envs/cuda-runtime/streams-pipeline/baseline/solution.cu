// Naive baseline: a single stream, whole-array copies, every step waits for the previous one.
#include "stream_pipeline.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define SOL_CHECK(call)                                                              \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

__global__ void pipeline_kernel_naive(const float* in, float* out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = pipeline_op(in[i]);
}

void pipeline_process(const float* h_in, float* h_out, size_t n)
{
    if (n == 0) return;
    float* d_in = nullptr;
    float* d_out = nullptr;
    cudaStream_t st;
    SOL_CHECK(cudaStreamCreate(&st));
    SOL_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    SOL_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
    SOL_CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, st));
    SOL_CHECK(cudaStreamSynchronize(st));
    pipeline_kernel_naive<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(d_in, d_out, n);
    SOL_CHECK(cudaGetLastError());
    SOL_CHECK(cudaStreamSynchronize(st));
    SOL_CHECK(cudaMemcpyAsync(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost, st));
    SOL_CHECK(cudaStreamSynchronize(st));
    SOL_CHECK(cudaFree(d_in));
    SOL_CHECK(cudaFree(d_out));
    SOL_CHECK(cudaStreamDestroy(st));
}
