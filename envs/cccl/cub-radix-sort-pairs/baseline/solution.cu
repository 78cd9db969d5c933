// Naive baseline: host round trip with std::stable_sort.
#include "rank_scores.h"
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

void rank_scores(const float* d_scores, const int* d_ids, float* d_scores_out, int* d_ids_out, int n)
{
    if (n <= 0) return;
    std::vector<float> s(n), s_out(n);
    std::vector<int> id(n), id_out(n), order(n);
    check(cudaMemcpy(s.data(), d_scores, n * sizeof(float), cudaMemcpyDeviceToHost), "copy scores");
    check(cudaMemcpy(id.data(), d_ids, n * sizeof(int), cudaMemcpyDeviceToHost), "copy ids");
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[a] > s[b]; });
    for (int i = 0; i < n; ++i) { s_out[i] = s[order[i]]; id_out[i] = id[order[i]]; }
    check(cudaMemcpy(d_scores_out, s_out.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy scores back");
    check(cudaMemcpy(d_ids_out, id_out.data(), n * sizeof(int), cudaMemcpyHostToDevice), "copy ids back");
}
