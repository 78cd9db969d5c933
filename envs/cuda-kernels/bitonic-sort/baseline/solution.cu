// Naive baseline: every compare-exchange step of the bitonic network is its own global kernel.
#include "bitonic_sort.h"

#include <cuda_runtime.h>

__global__ void bitonic_step(int* data, int n, int k, int j)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int partner = i ^ j;
    if (partner <= i) return;
    const int a = data[i], b = data[partner];
    const bool ascending = (i & k) == 0;
    if ((ascending && a > b) || (!ascending && a < b)) {
        data[i] = b;
        data[partner] = a;
    }
}

void bitonic_sort(int* data, int n)
{
    if (n < 2) return;
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            bitonic_step<<<(n + 255) / 256, 256>>>(data, n, k, j);
}
