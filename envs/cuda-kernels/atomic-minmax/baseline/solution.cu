// Naive baseline: one thread per element, two global atomics each.
#include "group_minmax.h"

#include <climits>
#include <cuda_runtime.h>

__global__ void init_naive(int* gmin, int* gmax, int g)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < g) {
        gmin[i] = INT_MAX;
        gmax[i] = INT_MIN;
    }
}

__global__ void minmax_naive(const int* keys, const int* vals, int n, int* gmin, int* gmax)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(&gmin[keys[i]], vals[i]);
        atomicMax(&gmax[keys[i]], vals[i]);
    }
}

void group_minmax(const int* keys, const int* vals, int n, int num_groups, int* gmin, int* gmax)
{
    init_naive<<<(num_groups + 255) / 256, 256>>>(gmin, gmax, num_groups);
    if (n > 0) minmax_naive<<<(n + 255) / 256, 256>>>(keys, vals, n, gmin, gmax);
}
