// Shared-memory tiling: each 32 x 8 thread block produces a 32 x 32 output tile. It loads the
// (32 + 4) x (32 + 4) input tile with its clamped halo once, sums each row's 5-wide windows into
// a second shared array (horizontal pass), then sums 5 of those vertically.
#include "box_blur.h"

#include <cuda_runtime.h>

namespace {

constexpr int R = 2;
constexpr int TW = 32;             // tile width (outputs)
constexpr int TH = 32;             // tile height (outputs)
constexpr int BX = 32, BY = 8;     // threads per block
constexpr int IW = TW + 2 * R;     // input tile width with halo
constexpr int IH = TH + 2 * R;     // input tile height with halo

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void __launch_bounds__(BX * BY) blur_tiled(const float* __restrict__ in, float* __restrict__ out,
                                                      int width, int height)
{
    __shared__ float tile[IH][IW + 1];
    __shared__ float hsum[IH][TW + 1];
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BX + threadIdx.x;

    for (int i = tid; i < IH * IW; i += BX * BY) {
        const int ty = i / IW, tx = i - ty * IW;
        const int gx = clampi(x0 + tx - R, 0, width - 1);
        const int gy = clampi(y0 + ty - R, 0, height - 1);
        tile[ty][tx] = __ldg(in + static_cast<size_t>(gy) * width + gx);
    }
    __syncthreads();

    for (int ty = threadIdx.y; ty < IH; ty += BY) {
        const int tx = threadIdx.x;
        hsum[ty][tx] = tile[ty][tx] + tile[ty][tx + 1] + tile[ty][tx + 2] + tile[ty][tx + 3] + tile[ty][tx + 4];
    }
    __syncthreads();

    const int gx = x0 + threadIdx.x;
    if (gx >= width) return;
#pragma unroll
    for (int k = 0; k < TH / BY; ++k) {
        const int ty = threadIdx.y + k * BY;
        const int gy = y0 + ty;
        if (gy >= height) break;
        const float s = hsum[ty][threadIdx.x] + hsum[ty + 1][threadIdx.x] + hsum[ty + 2][threadIdx.x] +
                        hsum[ty + 3][threadIdx.x] + hsum[ty + 4][threadIdx.x];
        out[static_cast<size_t>(gy) * width + gx] = s / 25.0f;
    }
}

}  // namespace

void box_blur5(const float* in, float* out, int width, int height)
{
    if (width <= 0 || height <= 0) return;
    dim3 block(BX, BY);
    dim3 grid((width + TW - 1) / TW, (height + TH - 1) / TH);
    blur_tiled<<<grid, block>>>(in, out, width, height);
}
