#include "segment_max.h"
#include <cub/device/device_segmented_reduce.cuh>
#include <cstdio>
#include <cstdlib>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

void segment_max(const float* d_vals, const int* d_offsets, int num_segments, float* d_out)
{
    if (num_segments <= 0) return;
    // Begin offsets are d_offsets[0..S-1], end offsets d_offsets[1..S]. CUB's Max seeds every
    // segment with numeric_limits<float>::lowest() == -FLT_MAX, which is the empty result.
    size_t temp_bytes = 0;
    check(cub::DeviceSegmentedReduce::Max(nullptr, temp_bytes, d_vals, d_out, num_segments, d_offsets,
                                          d_offsets + 1),
          "DeviceSegmentedReduce::Max (size query)");
    void* d_temp = nullptr;
    check(cudaMalloc(&d_temp, temp_bytes), "cudaMalloc");
    check(cub::DeviceSegmentedReduce::Max(d_temp, temp_bytes, d_vals, d_out, num_segments, d_offsets,
                                          d_offsets + 1),
          "DeviceSegmentedReduce::Max");
    check(cudaFree(d_temp), "cudaFree");
}
