// Naive baseline: filter in constant memory, one thread per output, every tap read from global.
#include "conv1d.h"

#include <cuda_runtime.h>

__constant__ float c_filter[2 * CONV1D_MAX_RADIUS + 1];
static int s_radius = 0;

__global__ void conv_naive(const float* in, float* out, int n, int r)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = -r; k <= r; ++k) {
        const int j = i + k;
        if (j >= 0 && j < n) acc += c_filter[k + r] * in[j];
    }
    out[i] = acc;
}

void conv1d_set_filter(const float* h_weights, int radius)
{
    s_radius = radius;
    cudaMemcpyToSymbol(c_filter, h_weights, sizeof(float) * (2 * radius + 1));
}

void conv1d_apply(const float* in, float* out, int n)
{
    if (n <= 0) return;
    conv_naive<<<(n + 255) / 256, 256>>>(in, out, n, s_radius);
}
