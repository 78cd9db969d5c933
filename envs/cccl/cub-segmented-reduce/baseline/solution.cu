// Naive baseline: one thread per segment loops over the whole segment.
#include "segment_max.h"
#include <cuda_runtime.h>
#include <cfloat>
#include <cstdio>
#include <cstdlib>

__global__ void segment_max_naive(const float* vals, const int* offsets, int num_segments, float* out)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < num_segments) {
        float m = -FLT_MAX;
        for (int i = offsets[s]; i < offsets[s + 1]; ++i) m = fmaxf(m, vals[i]);
        out[s] = m;
    }
}

void segment_max(const float* d_vals, const int* d_offsets, int num_segments, float* d_out)
{
    if (num_segments <= 0) return;
    segment_max_naive<<<(num_segments + 255) / 256, 256>>>(d_vals, d_offsets, num_segments, d_out);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(e));
        abort();
    }
}
