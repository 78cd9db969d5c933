// Naive baseline: a bottom-up stable merge sort in which every pass merges pairs of sorted
// runs, each element finding its place with a binary search in the other run of its pair
// (O(n log^2 n) work, one launch per pass, no shared memory).
#include "rank_scores.h"
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

// Merge the runs [start, start + width) and [start + width, start + 2 width) of every pair,
// scores descending. A left element goes after the right run's greater scores, a right
// element after the left run's greater or equal ones: equal scores keep their order (stable).
__global__ void merge_pass(const float* key, const int* val, float* key_out, int* val_out, int n, long long width)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long start = i / (2 * width) * (2 * width);
    const long long mid = start + width < n ? start + width : n;
    const long long end = start + 2 * width < n ? start + 2 * width : n;
    const float k = key[i];
    long long lo, hi, rank;
    if (i < mid) {
        lo = mid, hi = end;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (key[m] > k) lo = m + 1;
            else hi = m;
        }
        rank = (i - start) + (lo - mid);
    } else {
        lo = start, hi = mid;
        while (lo < hi) {
            const long long m = (lo + hi) / 2;
            if (key[m] >= k) lo = m + 1;
            else hi = m;
        }
        rank = (i - mid) + (lo - start);
    }
    key_out[start + rank] = k;
    val_out[start + rank] = val[i];
}

void rank_scores(const float* d_scores, const int* d_ids, float* d_scores_out, int* d_ids_out, int n)
{
    if (n <= 0) return;
    int passes = 0;
    for (long long width = 1; width < n; width *= 2) ++passes;
    if (passes == 0) {  // one pair
        check(cudaMemcpy(d_scores_out, d_scores, sizeof(float), cudaMemcpyDeviceToDevice), "copy");
        check(cudaMemcpy(d_ids_out, d_ids, sizeof(int), cudaMemcpyDeviceToDevice), "copy");
        return;
    }
    float* tmp_scores = nullptr;
    int* tmp_ids = nullptr;
    check(cudaMalloc(&tmp_scores, (size_t)n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&tmp_ids, (size_t)n * sizeof(int)), "cudaMalloc");
    // Alternate between the outputs and the scratch arrays so that the last pass writes the
    // outputs; the first pass reads the (unmodified) inputs.
    float* dst_key[2] = {d_scores_out, tmp_scores};
    int* dst_val[2] = {d_ids_out, tmp_ids};
    int to = (passes % 2 == 1) ? 0 : 1;
    const float* key = d_scores;
    const int* val = d_ids;
    const int threads = 256, blocks = (n + threads - 1) / threads;
    for (long long width = 1; width < n; width *= 2) {
        merge_pass<<<blocks, threads>>>(key, val, dst_key[to], dst_val[to], n, width);
        check(cudaGetLastError(), "merge_pass");
        key = dst_key[to];
        val = dst_val[to];
        to ^= 1;
    }
    check(cudaFree(tmp_scores), "cudaFree");
    check(cudaFree(tmp_ids), "cudaFree");
}
