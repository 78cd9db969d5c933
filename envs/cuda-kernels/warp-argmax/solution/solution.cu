// One warp per segment: coalesced 32-float load, then a 5-step butterfly (__shfl_xor_sync)
// that carries (value, index) pairs. Each warp walks several segments (grid-stride).
#include "segment_argmax.h"

#include <cuda_runtime.h>

namespace {

__global__ void __launch_bounds__(256) argmax_warps(const float* __restrict__ x, int n, int num_seg,
                                                    float* __restrict__ seg_max,
                                                    int* __restrict__ seg_arg)
{
    const int lane = threadIdx.x & 31;
    const int warps_total = (gridDim.x * blockDim.x) >> 5;
    for (int s = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < num_seg; s += warps_total) {
        const int i = s * 32 + lane;
        float v = -3.402823466e38f;  // -FLT_MAX with index INT_MAX: loses to every real element
        int idx = 0x7fffffff;
        if (i < n) {
            v = __ldg(x + i);
            idx = i;
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, v, off);
            const int oi = __shfl_xor_sync(0xffffffffu, idx, off);
            if (ov > v || (ov == v && oi < idx)) {
                v = ov;
                idx = oi;
            }
        }
        if (lane == 0) {
            seg_arg[s] = idx;
            seg_max[s] = v;  // the value loaded from x[idx], so bitwise identical
        }
    }
}

}  // namespace

void segment_argmax(const float* x, int n, float* seg_max, int* seg_arg)
{
    if (n <= 0) return;
    const int num_seg = (n + 31) / 32;
    const int block = 256;
    const int warps_per_block = block / 32;
    int blocks = (num_seg + warps_per_block - 1) / warps_per_block;
    const int cap = 132 * 32;  // plenty of resident warps, fewer index computations
    if (blocks > cap) blocks = cap;
    argmax_warps<<<blocks, block>>>(x, n, num_seg, seg_max, seg_arg);
}
