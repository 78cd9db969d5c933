// Three passes over tiles of 4096 elements (256 threads x 16 rounds):
//   1. count the kept elements of every tile (warp ballots + popc),
//   2. exclusive scan of the tile counts in one block (chunked, with a running carry),
//   3. re-read every tile and scatter: in each round a block-wide prefix of the ballots gives
//      each kept element its output slot, so the order is preserved.
#include "compact.h"

#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRounds = 16;
constexpr int kTile = kThreads * kRounds;
constexpr int kScanThreads = 1024;

__device__ __forceinline__ bool keep(float v) { return v > 0.0f; }

__global__ void __launch_bounds__(kThreads) count_tiles(const float* __restrict__ in, int n,
                                                        int* __restrict__ tile_counts)
{
    __shared__ int warp_sums[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long base = static_cast<long long>(blockIdx.x) * kTile;
    int c = 0;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
        const long long i = base + r * kThreads + threadIdx.x;
        const bool k = i < n && keep(__ldg(in + i));
        c += __popc(__ballot_sync(0xffffffffu, k));
    }
    if (lane == 0) warp_sums[warp] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int t = 0;
        for (int w = 0; w < kWarps; ++w) t += warp_sums[w];
        tile_counts[blockIdx.x] = t;
    }
}

// Single block: exclusive scan of tile_counts into tile_offsets; total into *count.
__global__ void __launch_bounds__(kScanThreads) scan_tiles(const int* __restrict__ tile_counts,
                                                           int* __restrict__ tile_offsets, int num_tiles,
                                                           int* __restrict__ count)
{
    __shared__ int warp_sums[kScanThreads / 32];
    __shared__ int carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int start = 0; start < num_tiles; start += kScanThreads) {
        const int i = start + threadIdx.x;
        const int v = i < num_tiles ? tile_counts[i] : 0;
        int incl = v;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const int o = __shfl_up_sync(0xffffffffu, incl, off);
            if (lane >= off) incl += o;
        }
        if (lane == 31) warp_sums[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            int ws = warp_sums[lane];
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                const int o = __shfl_up_sync(0xffffffffu, ws, off);
                if (lane >= off) ws += o;
            }
            warp_sums[lane] = ws;  // inclusive scan of warp totals
        }
        __syncthreads();
        const int before = (warp > 0 ? warp_sums[warp - 1] : 0) + carry;
        if (i < num_tiles) tile_offsets[i] = before + incl - v;
        __syncthreads();
        if (threadIdx.x == kScanThreads - 1) carry = before + incl;
        __syncthreads();
    }
    if (threadIdx.x == 0) *count = carry;
}

__global__ void __launch_bounds__(kThreads) scatter_tiles(const float* __restrict__ in, int n,
                                                          const int* __restrict__ tile_offsets,
                                                          float* __restrict__ out)
{
    __shared__ int warp_counts[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned lanes_below = (1u << lane) - 1u;
    const long long base = static_cast<long long>(blockIdx.x) * kTile;
    int running = tile_offsets[blockIdx.x];
    for (int r = 0; r < kRounds; ++r) {
        const long long i = base + r * kThreads + threadIdx.x;
        const float v = i < n ? __ldg(in + i) : 0.0f;
        const bool k = i < n && keep(v);
        const unsigned ballot = __ballot_sync(0xffffffffu, k);
        if (lane == 0) warp_counts[warp] = __popc(ballot);
        __syncthreads();
        int warp_off = 0, total = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const int cw = warp_counts[w];
            warp_off += (w < warp) ? cw : 0;
            total += cw;
        }
        if (k) out[running + warp_off + __popc(ballot & lanes_below)] = v;
        running += total;
        __syncthreads();  // warp_counts is rewritten next round
    }
}

int* g_scratch = nullptr;
int g_scratch_tiles = 0;

}  // namespace

void compact_positive(const float* in, int n, float* out, int* count)
{
    if (n <= 0) {
        cudaMemsetAsync(count, 0, sizeof(int), 0);
        return;
    }
    const int tiles = (n + kTile - 1) / kTile;
    if (tiles > g_scratch_tiles) {  // grow-only scratch, kept for later calls
        if (g_scratch) cudaFree(g_scratch);
        cudaMalloc(&g_scratch, 2 * sizeof(int) * tiles);
        g_scratch_tiles = tiles;
    }
    int* tile_counts = g_scratch;
    int* tile_offsets = g_scratch + tiles;
    count_tiles<<<tiles, kThreads>>>(in, n, tile_counts);
    scan_tiles<<<1, kScanThreads>>>(tile_counts, tile_offsets, tiles, count);
    scatter_tiles<<<tiles, kThreads>>>(in, n, tile_offsets, out);
}
