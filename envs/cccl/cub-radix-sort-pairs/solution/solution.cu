#include "rank_scores.h"
#include <cub/device/device_radix_sort.cuh>
#include <cstdio>
#include <cstdlib>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

void rank_scores(const float* d_scores, const int* d_ids, float* d_scores_out, int* d_ids_out, int n)
{
    if (n <= 0) return;
    // CUB's radix sort is stable and handles IEEE floats directly; the non-DoubleBuffer
    // overload leaves the input arrays untouched.
    size_t temp_bytes = 0;
    check(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes, d_scores, d_scores_out, d_ids, d_ids_out, n),
          "SortPairsDescending (size query)");
    void* d_temp = nullptr;
    check(cudaMalloc(&d_temp, temp_bytes), "cudaMalloc");
    check(cub::DeviceRadixSort::SortPairsDescending(d_temp, temp_bytes, d_scores, d_scores_out, d_ids, d_ids_out, n),
          "SortPairsDescending");
    check(cudaFree(d_temp), "cudaFree");
}
