// Bitonic sort: stages whose compare distance fits in one tile run in shared memory,
// larger distances run as one global pass each.
#include "bitonic_sort.h"

#include <cuda_runtime.h>

namespace {

constexpr int kTile = 2048;  // elements per block in the shared-memory kernels

__device__ __forceinline__ void cmp_swap(int& a, int& b, bool ascending)
{
    if ((a > b) == ascending) {
        const int t = a;
        a = b;
        b = t;
    }
}

// Every stage k = 2..tile of the network, entirely inside one tile.
__global__ void sort_tiles(int* __restrict__ data, int tile)
{
    extern __shared__ int s[];
    const size_t base = static_cast<size_t>(blockIdx.x) * tile;
    for (int t = threadIdx.x; t < tile; t += blockDim.x) s[t] = data[base + t];
    __syncthreads();
    const int p = threadIdx.x;  // pair index, tile / 2 pairs
    for (int k = 2; k <= tile; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            const int i = ((p & ~(j - 1)) << 1) | (p & (j - 1));
            const bool asc = (((base + i) & static_cast<size_t>(k)) == 0);
            int a = s[i], b = s[i + j];
            cmp_swap(a, b, asc);
            s[i] = a;
            s[i + j] = b;
            __syncthreads();
        }
    }
    for (int t = threadIdx.x; t < tile; t += blockDim.x) data[base + t] = s[t];
}

// For stage k > tile: every distance j < tile, i.e. j = tile/2 .. 1, inside one tile.
__global__ void merge_tiles(int* __restrict__ data, int tile, unsigned k)
{
    extern __shared__ int s[];
    const size_t base = static_cast<size_t>(blockIdx.x) * tile;
    for (int t = threadIdx.x; t < tile; t += blockDim.x) s[t] = data[base + t];
    __syncthreads();
    const bool asc = ((base & k) == 0);  // k > tile: same direction for the whole tile
    const int p = threadIdx.x;
    for (int j = tile >> 1; j > 0; j >>= 1) {
        const int i = ((p & ~(j - 1)) << 1) | (p & (j - 1));
        int a = s[i], b = s[i + j];
        cmp_swap(a, b, asc);
        s[i] = a;
        s[i + j] = b;
        __syncthreads();
    }
    for (int t = threadIdx.x; t < tile; t += blockDim.x) data[base + t] = s[t];
}

// One (k, j) step with j >= tile, one pair per thread.
__global__ void global_step(int* __restrict__ data, unsigned half_n, unsigned k, unsigned j)
{
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= half_n) return;
    const unsigned i = ((p & ~(j - 1)) << 1) | (p & (j - 1));
    int a = data[i], b = data[i + j];
    const bool asc = ((i & k) == 0);
    if ((a > b) == asc) {
        data[i] = b;
        data[i + j] = a;
    }
}

}  // namespace

void bitonic_sort(int* data, int n)
{
    if (n < 2) return;
    const int tile = n < kTile ? n : kTile;
    const int blocks = n / tile;
    const size_t smem = sizeof(int) * tile;
    sort_tiles<<<blocks, tile / 2, smem>>>(data, tile);
    const unsigned half_n = static_cast<unsigned>(n) / 2;
    for (unsigned k = 2u * tile; k <= static_cast<unsigned>(n); k <<= 1) {
        for (unsigned j = k >> 1; j >= static_cast<unsigned>(tile); j >>= 1)
            global_step<<<(half_n + 255) / 256, 256>>>(data, half_n, k, j);
        merge_tiles<<<blocks, tile / 2, smem>>>(data, tile, k);
    }
}
