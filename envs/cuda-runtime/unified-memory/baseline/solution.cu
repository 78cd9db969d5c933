// Naive baseline: managed memory without prefetching; one thread per node walks the whole
// chain of parent links to its root.
#include "forest_depth.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define SOL_CHECK(call)                                                              \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

__global__ void walk(const int* parent, int* depth, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int d = 0, j = i;
        while (parent[j] != j) { j = parent[j]; ++d; }
        depth[i] = d;
    }
}

int* forest_depths(const int* parent, int n)
{
    if (n <= 0) return nullptr;
    int *m_parent = nullptr, *m_depth = nullptr;
    SOL_CHECK(cudaMallocManaged(&m_parent, (size_t)n * sizeof(int)));
    SOL_CHECK(cudaMallocManaged(&m_depth, (size_t)n * sizeof(int)));
    for (int i = 0; i < n; ++i) m_parent[i] = parent[i];
    walk<<<(n + 255) / 256, 256>>>(m_parent, m_depth, n);
    SOL_CHECK(cudaGetLastError());
    SOL_CHECK(cudaDeviceSynchronize());
    SOL_CHECK(cudaFree(m_parent));
    return m_depth;
}
