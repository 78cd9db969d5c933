#include <cstdint>
#include <cuda_runtime.h>
#include "histogram.h"

// Privatised histogram: every warp owns a 256-bin sub-histogram in shared memory (so heavy
// contention on one byte value stays inside a warp), the body of the input is read as
// 16-byte vectors, and each block adds its merged counts to the global bins once at the end.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBlocks = 1024;

__device__ __forceinline__ void count_word(unsigned int* sub, unsigned int w) {
    atomicAdd(&sub[w & 0xFFu], 1u);
    atomicAdd(&sub[(w >> 8) & 0xFFu], 1u);
    atomicAdd(&sub[(w >> 16) & 0xFFu], 1u);
    atomicAdd(&sub[w >> 24], 1u);
}

__global__ void __launch_bounds__(kThreads)
hist_kernel(const unsigned char* __restrict__ data, size_t n, size_t head, size_t nvec,
            unsigned int* __restrict__ bins) {
    __shared__ unsigned int sub[kWarps][256];
    for (int i = threadIdx.x; i < kWarps * 256; i += kThreads) (&sub[0][0])[i] = 0u;
    __syncthreads();

    unsigned int* mine = sub[threadIdx.x >> 5];
    const size_t gtid = (size_t)blockIdx.x * kThreads + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * kThreads;

    // Unaligned head (fewer than 16 bytes) and the tail after the last full vector.
    if (gtid < head) atomicAdd(&mine[data[gtid]], 1u);
    for (size_t i = head + nvec * 16 + gtid; i < n; i += stride) atomicAdd(&mine[data[i]], 1u);

    const uint4* vec = reinterpret_cast<const uint4*>(data + head);
    for (size_t i = gtid; i < nvec; i += stride) {
        uint4 v = vec[i];
        count_word(mine, v.x);
        count_word(mine, v.y);
        count_word(mine, v.z);
        count_word(mine, v.w);
    }
    __syncthreads();

    for (int b = threadIdx.x; b < 256; b += kThreads) {
        unsigned int total = 0;
        for (int w = 0; w < kWarps; ++w) total += sub[w][b];
        if (total) atomicAdd(&bins[b], total);
    }
}

void histogram256(const unsigned char* data, size_t n, unsigned int* bins) {
    cudaMemsetAsync(bins, 0, 256 * sizeof(unsigned int), 0);
    if (n == 0) return;
    size_t head = (16 - (reinterpret_cast<uintptr_t>(data) & 15u)) & 15u;
    if (head > n) head = n;
    size_t nvec = (n - head) / 16;
    size_t work = nvec > 0 ? nvec : (n + 15) / 16;
    size_t blocks = (work + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    if (blocks < 1) blocks = 1;
    hist_kernel<<<(unsigned)blocks, kThreads>>>(data, n, head, nvec, bins);
}
