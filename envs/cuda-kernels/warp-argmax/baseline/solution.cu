// Naive baseline: one warp per segment; lane 0 walks all 32 lanes' values one by one, fetched
// with 32 broadcast shuffles, instead of a log-step reduction.
#include "segment_argmax.h"

#include <cuda_runtime.h>

__global__ void argmax_serial_shuffle(const float* x, int n, float* seg_max, int* seg_arg)
{
    const int s = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const int num_seg = (n + 31) / 32;
    if (s >= num_seg) return;  // whole warps leave together (blockDim is a multiple of 32)
    const int i = s * 32 + lane;
    const float mine = i < n ? x[i] : 0.0f;
    float best = 0.0f;
    int best_i = -1;
    for (int k = 0; k < 32; ++k) {
        const float v = __shfl_sync(0xffffffffu, mine, k);
        const int j = s * 32 + k;
        if (j < n && (best_i < 0 || v > best)) {
            best = v;
            best_i = j;
        }
    }
    if (lane == 0) {
        seg_max[s] = best;
        seg_arg[s] = best_i;
    }
}

void segment_argmax(const float* x, int n, float* seg_max, int* seg_arg)
{
    if (n <= 0) return;
    const long long threads = static_cast<long long>((n + 31) / 32) * 32;
    argmax_serial_shuffle<<<static_cast<unsigned>((threads + 127) / 128), 128>>>(x, n, seg_max, seg_arg);
}
