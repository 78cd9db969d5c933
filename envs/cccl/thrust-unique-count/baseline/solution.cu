// Naive baseline: host round trip, std::sort and std::unique.
#include "distinct_count.h"
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int count_distinct(const int* d_values, int n)
{
    if (n <= 0) return 0;
    std::vector<int> v(n);
    cudaError_t e = cudaMemcpy(v.data(), d_values, n * sizeof(int), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        fprintf(stderr, "copy failed: %s\n", cudaGetErrorString(e));
        abort();
    }
    std::sort(v.begin(), v.end());
    return (int)(std::unique(v.begin(), v.end()) - v.begin());
}
