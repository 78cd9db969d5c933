#include <cuda_runtime.h>
#include "axpby.h"

// Naive baseline: a small fixed grid walks the whole array with scalar loads.
__global__ void axpby_naive(int n, float alpha, const float* x, float beta, const float* y,
                            float* z) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        z[i] = alpha * x[i] + beta * y[i];
}

void axpby(int n, float alpha, const float* x, float beta, const float* y, float* z) {
    if (n <= 0) return;
    axpby_naive<<<8, 128>>>(n, alpha, x, beta, y, z);
}
