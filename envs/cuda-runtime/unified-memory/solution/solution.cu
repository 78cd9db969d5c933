#include "forest_depth.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define SOL_CHECK(call)                                                              \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

__global__ void init_depth(const int* __restrict__ nxt, int* __restrict__ dep, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dep[i] = (nxt[i] == i) ? 0 : 1;
}

// One pointer-jumping round: after it, nxt_out[i] is 2x further up the tree and dep_out[i]
// counts the links skipped so far. Roots are fixed points (nxt = self, dep = 0).
__global__ void jump(const int* __restrict__ nxt_in, const int* __restrict__ dep_in,
                     int* __restrict__ nxt_out, int* __restrict__ dep_out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = nxt_in[i];
        dep_out[i] = dep_in[i] + dep_in[j];
        nxt_out[i] = nxt_in[j];
    }
}

static void prefetch_to_device(const void* p, size_t bytes, int dev, cudaStream_t s)
{
#if CUDART_VERSION >= 13000
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    SOL_CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s));
#else
    SOL_CHECK(cudaMemPrefetchAsync(p, bytes, dev, s));
#endif
}

int* forest_depths(const int* parent, int n)
{
    if (n <= 0) return nullptr;
    size_t bytes = (size_t)n * sizeof(int);
    int *nxt[2], *dep[2];
    for (int b = 0; b < 2; ++b) {
        SOL_CHECK(cudaMallocManaged(&nxt[b], bytes));
        SOL_CHECK(cudaMallocManaged(&dep[b], bytes));
    }
    memcpy(nxt[0], parent, bytes);  // host writes straight into managed memory

    int dev = 0, concurrent = 0;
    SOL_CHECK(cudaGetDevice(&dev));
    SOL_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));
    if (concurrent) {
        for (int b = 0; b < 2; ++b) {
            prefetch_to_device(nxt[b], bytes, dev, 0);
            prefetch_to_device(dep[b], bytes, dev, 0);
        }
    }

    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    init_depth<<<blocks, threads>>>(nxt[0], dep[0], n);
    SOL_CHECK(cudaGetLastError());
    int rounds = 0;
    while (((long long)1 << rounds) < n) ++rounds;  // 2^rounds >= n > max depth
    int cur = 0;
    for (int r = 0; r < rounds; ++r) {
        jump<<<blocks, threads>>>(nxt[cur], dep[cur], nxt[cur ^ 1], dep[cur ^ 1], n);
        SOL_CHECK(cudaGetLastError());
        cur ^= 1;
    }
    SOL_CHECK(cudaDeviceSynchronize());
    SOL_CHECK(cudaFree(nxt[0]));
    SOL_CHECK(cudaFree(nxt[1]));
    SOL_CHECK(cudaFree(dep[cur ^ 1]));
    return dep[cur];
}
