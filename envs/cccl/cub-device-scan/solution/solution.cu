#include "prefix_offsets.h"
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <cstdio>
#include <cstdlib>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

void exclusive_offsets(const int* d_in, long long* d_out, int n, cudaStream_t stream)
{
    if (n <= 0) return;
    // A 64-bit initial value and operator make the scan accumulate in long long; the int
    // inputs are widened as they are read.
    const long long init = 0;
    size_t temp_bytes = 0;
    check(cub::DeviceScan::ExclusiveScan(nullptr, temp_bytes, d_in, d_out, cuda::std::plus<long long>{}, init, n,
                                         stream),
          "ExclusiveScan (size query)");
    void* d_temp = nullptr;
    check(cudaMallocAsync(&d_temp, temp_bytes, stream), "cudaMallocAsync");
    check(cub::DeviceScan::ExclusiveScan(d_temp, temp_bytes, d_in, d_out, cuda::std::plus<long long>{}, init, n,
                                         stream),
          "ExclusiveScan");
    check(cudaFreeAsync(d_temp, stream), "cudaFreeAsync");
}
