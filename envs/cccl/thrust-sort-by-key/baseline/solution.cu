// Naive baseline: a bottom-up stable merge sort in which every pass merges pairs of sorted
// runs, each element finding its place with a binary search in the other run of its pair
// (O(n log^2 n) work, one launch per pass, no shared memory).
#include "cell_sort.h"
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

// Merge the runs [start, start + width) and [start + width, start + 2 width) of every pair.
// A left element goes after the right run's smaller keys, a right element after the left
// run's smaller or equal keys: equal keys keep their order (stable).
__global__ void merge_pass(const int* key, const int* val, int* key_out, int* val_out, int n, long long width)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long start = i / (2 * width) * (2 * width);
    const long long mid = start + width < n ? start + width : n;
    const long long end = start + 2 * width < n ? start + 2 * width : n;
    const int k = key[i];
    long long lo, hi, rank;
    if (i < mid) {
        lo = mid, hi = end;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (key[m] < k) lo = m + 1;
            else hi = m;
        }
        rank = (i - start) + (lo - mid);
    } else {
        lo = start, hi = mid;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (key[m] <= k) lo = m + 1;
            else hi = m;
        }
        rank = (i - mid) + (lo - start);
    }
    key_out[start + rank] = k;
    val_out[start + rank] = val[i];
}

void sort_by_cell(int* d_cell, int* d_id, int n)
{
    if (n <= 1) return;
    int *tmp_cell = nullptr, *tmp_id = nullptr;
    check(cudaMalloc(&tmp_cell, (size_t)n * sizeof(int)), "cudaMalloc");
    check(cudaMalloc(&tmp_id, (size_t)n * sizeof(int)), "cudaMalloc");
    int *key = d_cell, *val = d_id, *key_out = tmp_cell, *val_out = tmp_id;
    const int threads = 256, blocks = (n + threads - 1) / threads;
    for (long long width = 1; width < n; width *= 2) {
        merge_pass<<<blocks, threads>>>(key, val, key_out, val_out, n, width);
        check(cudaGetLastError(), "merge_pass");
        std::swap(key, key_out);
        std::swap(val, val_out);
    }
    if (key != d_cell) {  // the last pass wrote the scratch arrays
        check(cudaMemcpy(d_cell, key, (size_t)n * sizeof(int), cudaMemcpyDeviceToDevice), "copy back");
        check(cudaMemcpy(d_id, val, (size_t)n * sizeof(int), cudaMemcpyDeviceToDevice), "copy back");
    }
    check(cudaDeviceSynchronize(), "merge sort");  // in place when this returns
    check(cudaFree(tmp_cell), "cudaFree");
    check(cudaFree(tmp_id), "cudaFree");
}
