#include <cuda_runtime.h>
#include "transpose.h"

// Naive baseline: one thread per element, coalesced reads and strided (uncoalesced) writes.
__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
        if (c < cols) out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
}

void transpose(const float* in, float* out, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    dim3 block(32, 8);
    int ry = (rows + 7) / 8;
    dim3 grid((cols + 31) / 32, ry < 65535 ? ry : 65535);
    transpose_naive<<<grid, block>>>(in, out, rows, cols);
}
