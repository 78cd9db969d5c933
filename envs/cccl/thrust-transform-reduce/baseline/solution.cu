// Naive baseline: a single thread block walks the whole array (two passes), accumulating
// in double and reducing in shared memory.
#include "moments.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

__global__ void one_block_moments(const float* x, int n, double* out)
{
    __shared__ double buf[256];
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += (double)x[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    double m = buf[0] / n;
    __syncthreads();
    double q = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        double d = (double)x[i] - m;
        q += d * d;
    }
    buf[threadIdx.x] = q;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = m;
        out[1] = buf[0] / n;
    }
}

void mean_and_variance(const float* d_x, int n, double* mean, double* variance)
{
    if (n <= 0) {
        *mean = 0.0;
        *variance = 0.0;
        return;
    }
    double* d_out = nullptr;
    check(cudaMalloc(&d_out, 2 * sizeof(double)), "cudaMalloc");
    one_block_moments<<<1, 256>>>(d_x, n, d_out);
    check(cudaGetLastError(), "launch");
    double h[2];
    check(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost), "copy back");
    check(cudaFree(d_out), "cudaFree");
    *mean = h[0];
    *variance = h[1];
}
