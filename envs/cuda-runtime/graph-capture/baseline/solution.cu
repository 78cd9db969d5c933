// Naive baseline: two plain kernel launches per iteration, no graph.
#include "graph_relax.h"
#include <cstdio>
#include <cstdlib>

__global__ void smooth_kernel(const float* x, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int l = i > 0 ? i - 1 : 0;
        int r = i < n - 1 ? i + 1 : n - 1;
        tmp[i] = 0.25f * x[l] + 0.5f * x[i] + 0.25f * x[r];
    }
}

__global__ void relax_kernel(float* x, const float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.99f * tmp[i] + 0.01f;
}

void relax_iterations(float* d_x, float* d_tmp, int n, int iters, cudaStream_t stream)
{
    if (n <= 0) return;
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    for (int it = 0; it < iters; ++it) {
        smooth_kernel<<<blocks, threads, 0, stream>>>(d_x, d_tmp, n);
        relax_kernel<<<blocks, threads, 0, stream>>>(d_x, d_tmp, n);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(err));
        abort();
    }
}
