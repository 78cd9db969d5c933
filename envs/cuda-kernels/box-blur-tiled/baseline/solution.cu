// Naive baseline: one thread per pixel, all 25 taps read straight from global memory.
#include "box_blur.h"

#include <cuda_runtime.h>

__global__ void blur_naive(const float* in, float* out, int width, int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float sum = 0.0f;
    for (int dy = -2; dy <= 2; ++dy) {
        int yy = y + dy;
        yy = yy < 0 ? 0 : (yy >= height ? height - 1 : yy);
        for (int dx = -2; dx <= 2; ++dx) {
            int xx = x + dx;
            xx = xx < 0 ? 0 : (xx >= width ? width - 1 : xx);
            sum += in[static_cast<size_t>(yy) * width + xx];
        }
    }
    out[static_cast<size_t>(y) * width + x] = sum / 25.0f;
}

void box_blur5(const float* in, float* out, int width, int height)
{
    if (width <= 0 || height <= 0) return;
    dim3 block(16, 16);
    dim3 grid((width + 15) / 16, (height + 15) / 16);
    blur_naive<<<grid, block>>>(in, out, width, height);
}
