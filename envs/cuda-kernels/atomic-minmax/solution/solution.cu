// Small group counts: each block keeps private min/max tables in shared memory (shared-memory
// atomics), then merges only the groups it touched into global memory. Large group counts:
// global atomics directly (contention is low there anyway).
#include "group_minmax.h"

#include <climits>
#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxSharedGroups = 4096;  // 2 tables * 4096 * 4 B = 32 KiB

__global__ void init_tables(int* __restrict__ gmin, int* __restrict__ gmax, int g)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < g; i += gridDim.x * blockDim.x) {
        gmin[i] = INT_MAX;
        gmax[i] = INT_MIN;
    }
}

__global__ void __launch_bounds__(kThreads) minmax_shared(const int* __restrict__ keys,
                                                          const int* __restrict__ vals, int n, int g,
                                                          int* __restrict__ gmin, int* __restrict__ gmax)
{
    extern __shared__ int tables[];
    int* smin = tables;
    int* smax = tables + g;
    for (int i = threadIdx.x; i < g; i += blockDim.x) {
        smin[i] = INT_MAX;
        smax[i] = INT_MIN;
    }
    __syncthreads();
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int k = __ldg(keys + i);
        const int v = __ldg(vals + i);
        // Cheap pre-checks skip most atomics once the tables have settled.
        if (v < smin[k]) atomicMin(&smin[k], v);
        if (v > smax[k]) atomicMax(&smax[k], v);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < g; i += blockDim.x) {
        const int mn = smin[i], mx = smax[i];
        if (mn != INT_MAX) atomicMin(&gmin[i], mn);
        if (mx != INT_MIN) atomicMax(&gmax[i], mx);
    }
}

__global__ void minmax_global(const int* __restrict__ keys, const int* __restrict__ vals, int n,
                              int* __restrict__ gmin, int* __restrict__ gmax)
{
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int k = __ldg(keys + i);
        const int v = __ldg(vals + i);
        atomicMin(&gmin[k], v);
        atomicMax(&gmax[k], v);
    }
}

int sm_count()
{
    static int count = 0;
    if (count == 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev);
        if (count <= 0) count = 80;
    }
    return count;
}

}  // namespace

void group_minmax(const int* keys, const int* vals, int n, int num_groups, int* gmin, int* gmax)
{
    if (num_groups <= 0) return;
    const int init_blocks = (num_groups + 255) / 256 < 1024 ? (num_groups + 255) / 256 : 1024;
    init_tables<<<init_blocks, 256>>>(gmin, gmax, num_groups);
    if (n <= 0) return;
    const int needed = (n + kThreads - 1) / kThreads;
    if (num_groups <= kMaxSharedGroups) {
        // Fewer blocks than one per tile: each block amortises its table setup and merge.
        int blocks = sm_count() * 2;
        if (blocks > needed) blocks = needed;
        const size_t smem = 2 * sizeof(int) * num_groups;
        minmax_shared<<<blocks, kThreads, smem>>>(keys, vals, n, num_groups, gmin, gmax);
    } else {
        int blocks = sm_count() * 8;
        if (blocks > needed) blocks = needed;
        minmax_global<<<blocks, kThreads>>>(keys, vals, n, gmin, gmax);
    }
}
