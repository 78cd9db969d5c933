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

__global__ void pipeline_kernel(const float* __restrict__ in, float* __restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = pipeline_op(in[i]);
    }
}

void pipeline_process(const float* h_in, float* h_out, size_t n)
{
    if (n == 0) return;
    const int kStreams = 4;
    const size_t kChunk = (size_t)1 << 20;  // 4 MiB of floats per chunk

    float* d_in = nullptr;
    float* d_out = nullptr;
    SOL_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    SOL_CHECK(cudaMalloc(&d_out, n * sizeof(float)));

    cudaStream_t streams[kStreams];
    for (int s = 0; s < kStreams; ++s) SOL_CHECK(cudaStreamCreate(&streams[s]));

    size_t chunks = (n + kChunk - 1) / kChunk;
    for (size_t c = 0; c < chunks; ++c) {
        cudaStream_t st = streams[c % kStreams];
        size_t off = c * kChunk;
        size_t len = (n - off < kChunk) ? (n - off) : kChunk;
        SOL_CHECK(cudaMemcpyAsync(d_in + off, h_in + off, len * sizeof(float), cudaMemcpyHostToDevice, st));
        unsigned blocks = (unsigned)((len + 255) / 256);
        if (blocks > 1024) blocks = 1024;
        pipeline_kernel<<<blocks, 256, 0, st>>>(d_in + off, d_out + off, len);
        SOL_CHECK(cudaGetLastError());
        SOL_CHECK(cudaMemcpyAsync(h_out + off, d_out + off, len * sizeof(float), cudaMemcpyDeviceToHost, st));
    }
    for (int s = 0; s < kStreams; ++s) {
        SOL_CHECK(cudaStreamSynchronize(streams[s]));
        SOL_CHECK(cudaStreamDestroy(streams[s]));
    }
    SOL_CHECK(cudaFree(d_in));
    SOL_CHECK(cudaFree(d_out));
}
