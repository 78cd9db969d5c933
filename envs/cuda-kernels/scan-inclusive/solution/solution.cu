#include <cuda_runtime.h>
#include "scan.h"

// Reduce-then-propagate scan built from one tile kernel:
//   1. every block scans a tile of kTile ints and records the tile total,
//   2. the tile totals are scanned recursively (in place),
//   3. every tile but the first adds the scanned total of the tiles before it.
constexpr int kThreads = 512;
constexpr int kItems = 4;
constexpr int kTile = kThreads * kItems;  // 2048

__device__ __forceinline__ int warp_inclusive(int v, int lane) {
    for (int off = 1; off < 32; off <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += t;
    }
    return v;
}

// Scans tile blockIdx.x of in into out (in may equal out). If sums != nullptr, stores the
// tile total in sums[blockIdx.x].
__global__ void __launch_bounds__(kThreads) scan_tiles(const int* in, int* out, int n, int* sums) {
    __shared__ int tile[kTile + kTile / 32];  // padded to avoid bank conflicts
    __shared__ int warp_tot[kThreads / 32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long long base = (long long)blockIdx.x * kTile;
    auto pad = [](int i) { return i + (i >> 5); };

    for (int k = 0; k < kItems; ++k) {  // coalesced load
        int i = tid + k * kThreads;
        long long g = base + i;
        tile[pad(i)] = (g < n) ? in[g] : 0;
    }
    __syncthreads();

    int v[kItems];  // each thread owns kItems consecutive elements
    int run = 0;
    for (int k = 0; k < kItems; ++k) { run += tile[pad(tid * kItems + k)]; v[k] = run; }

    int incl = warp_inclusive(run, lane);
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        int w = (lane < kThreads / 32) ? warp_tot[lane] : 0;
        w = warp_inclusive(w, lane);
        if (lane < kThreads / 32) warp_tot[lane] = w;
    }
    __syncthreads();
    int offset = (incl - run) + (warp > 0 ? warp_tot[warp - 1] : 0);
    for (int k = 0; k < kItems; ++k) tile[pad(tid * kItems + k)] = v[k] + offset;
    if (sums != nullptr && tid == kThreads - 1) sums[blockIdx.x] = v[kItems - 1] + offset;
    __syncthreads();

    for (int k = 0; k < kItems; ++k) {  // coalesced store
        int i = tid + k * kThreads;
        long long g = base + i;
        if (g < n) out[g] = tile[pad(i)];
    }
}

__global__ void __launch_bounds__(kThreads) add_tile_offsets(int* out, int n, const int* scanned_sums) {
    if (blockIdx.x == 0) return;
    const int add = scanned_sums[blockIdx.x - 1];
    const long long base = (long long)blockIdx.x * kTile;
    for (int k = 0; k < kItems; ++k) {
        long long g = base + threadIdx.x + k * kThreads;
        if (g < n) out[g] += add;
    }
}

static int* g_scratch = nullptr;
static size_t g_scratch_len = 0;

static void scan_level(const int* in, int* out, int n, int* scratch) {
    int tiles = (int)(((long long)n + kTile - 1) / kTile);
    if (tiles <= 1) {
        scan_tiles<<<1, kThreads>>>(in, out, n, nullptr);
        return;
    }
    int* sums = scratch;
    scan_tiles<<<tiles, kThreads>>>(in, out, n, sums);
    scan_level(sums, sums, tiles, scratch + tiles);
    add_tile_offsets<<<tiles, kThreads>>>(out, n, sums);
}

void inclusive_scan(const int* in, int* out, int n) {
    if (n <= 0) return;
    size_t need = 0;
    for (long long m = n; m > kTile;) { m = (m + kTile - 1) / kTile; need += (size_t)m; }
    if (need > g_scratch_len) {
        if (g_scratch) cudaFree(g_scratch);
        g_scratch = nullptr;
        g_scratch_len = 0;
        if (cudaMalloc(&g_scratch, need * sizeof(int)) != cudaSuccess) return;  // error stays visible
        g_scratch_len = need;
    }
    scan_level(in, out, n, g_scratch);
}
