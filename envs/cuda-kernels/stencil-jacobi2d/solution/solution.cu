#include "jacobi2d.h"

#include <cuda_runtime.h>

namespace {

constexpr int kBx = 32;
constexpr int kBy = 8;
constexpr int kRowsPerThread = 4;  // each block covers 32 x 32 cells

__global__ void jacobi_kernel(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    const int c = blockIdx.x * kBx + threadIdx.x;
    if (c >= nx) return;
    const int r0 = blockIdx.y * (kBy * kRowsPerThread) + threadIdx.y;
    for (int k = 0; k < kRowsPerThread; ++k) {
        const int r = r0 + k * kBy;
        if (r >= ny) return;
        const size_t idx = static_cast<size_t>(r) * nx + c;
        float v;
        if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) {
            v = in[idx];
        } else {
            const float up = __ldg(in + idx - nx);
            const float dn = __ldg(in + idx + nx);
            const float lf = __ldg(in + idx - 1);
            const float rt = __ldg(in + idx + 1);
            v = 0.25f * ((up + dn) + (lf + rt));
        }
        out[idx] = v;
    }
}

}  // namespace

void jacobi_step(const float* in, float* out, int nx, int ny)
{
    if (nx <= 0 || ny <= 0) return;
    dim3 block(kBx, kBy);
    dim3 grid((nx + kBx - 1) / kBx, (ny + kBy * kRowsPerThread - 1) / (kBy * kRowsPerThread));
    jacobi_kernel<<<grid, block>>>(in, out, nx, ny);
}
