// Naive baseline: sort a copy with a bottom-up merge sort in which each element of every pass
// finds its place with a binary search (O(n log^2 n) work, one launch per pass), then count
// the positions where the sorted value changes.
#include "distinct_count.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <utility>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

// Merge the sorted runs [start, start + width) and [start + width, start + 2 width) of every
// pair (ties: left first, so every value lands on a distinct position).
__global__ void merge_pass(const int* in, int* out, int n, long long width)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long start = i / (2 * width) * (2 * width);
    const long long mid = start + width < n ? start + width : n;
    const long long end = start + 2 * width < n ? start + 2 * width : n;
    const int v = in[i];
    long long lo, hi, rank;
    if (i < mid) {
        lo = mid, hi = end;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (in[m] < v) lo = m + 1;
            else hi = m;
        }
        rank = (i - start) + (lo - mid);
    } else {
        lo = start, hi = mid;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (in[m] <= v) lo = m + 1;
            else hi = m;
        }
        rank = (i - mid) + (lo - start);
    }
    out[start + rank] = v;
}

// Each block counts its run starts in shared memory and adds them to the total once.
__global__ void count_starts(const int* sorted, int n, unsigned long long* total)
{
    __shared__ unsigned int block_count;
    if (threadIdx.x == 0) block_count = 0;
    __syncthreads();
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n && (i == 0 || sorted[i] != sorted[i - 1])) atomicAdd(&block_count, 1u);
    __syncthreads();
    if (threadIdx.x == 0 && block_count) atomicAdd(total, (unsigned long long)block_count);
}

int count_distinct(const int* d_values, int n)
{
    if (n <= 0) return 0;
    int *a = nullptr, *b = nullptr;
    unsigned long long* d_total = nullptr;
    check(cudaMalloc(&a, (size_t)n * sizeof(int)), "cudaMalloc");
    check(cudaMalloc(&b, (size_t)n * sizeof(int)), "cudaMalloc");
    check(cudaMalloc(&d_total, sizeof(unsigned long long)), "cudaMalloc");
    check(cudaMemset(d_total, 0, sizeof(unsigned long long)), "cudaMemset");
    const int threads = 256, blocks = (n + threads - 1) / threads;
    const int* src = d_values;  // the first pass reads the input, which stays unmodified
    for (long long width = 1; width < n; width *= 2) {
        merge_pass<<<blocks, threads>>>(src, a, n, width);
        check(cudaGetLastError(), "merge_pass");
        src = a;
        std::swap(a, b);
    }
    count_starts<<<blocks, threads>>>(src, n, d_total);
    check(cudaGetLastError(), "count_starts");
    unsigned long long total = 0;
    check(cudaMemcpy(&total, d_total, sizeof total, cudaMemcpyDeviceToHost), "copy count");
    check(cudaFree(a), "cudaFree");
    check(cudaFree(b), "cudaFree");
    check(cudaFree(d_total), "cudaFree");
    return (int)total;
}
