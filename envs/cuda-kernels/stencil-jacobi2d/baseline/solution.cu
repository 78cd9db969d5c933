// Naive baseline: one thread per cell, threadIdx.x walks down a column (uncoalesced accesses).
#include "jacobi2d.h"

#include <cuda_runtime.h>

__global__ void jacobi_naive(const float* in, float* out, int nx, int ny)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    const int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= ny || c >= nx) return;
    const size_t idx = static_cast<size_t>(r) * nx + c;
    if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) {
        out[idx] = in[idx];
    } else {
        out[idx] = 0.25f * (in[idx - nx] + in[idx + nx] + in[idx - 1] + in[idx + 1]);
    }
}

void jacobi_step(const float* in, float* out, int nx, int ny)
{
    if (nx <= 0 || ny <= 0) return;
    dim3 block(16, 16);
    dim3 grid((ny + 15) / 16, (nx + 15) / 16);
    jacobi_naive<<<grid, block>>>(in, out, nx, ny);
}
