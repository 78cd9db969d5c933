// Naive baseline: copy both arrays to the host, std::stable_sort the pairs, copy back.
#include "cell_sort.h"
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        abort();
    }
}

void sort_by_cell(int* d_cell, int* d_id, int n)
{
    if (n <= 1) return;
    std::vector<int> cell(n), id(n);
    check(cudaMemcpy(cell.data(), d_cell, n * sizeof(int), cudaMemcpyDeviceToHost), "copy cell");
    check(cudaMemcpy(id.data(), d_id, n * sizeof(int), cudaMemcpyDeviceToHost), "copy id");
    std::vector<std::pair<int, int>> pairs(n);
    for (int i = 0; i < n; ++i) pairs[i] = {cell[i], id[i]};
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const std::pair<int, int>& a, const std::pair<int, int>& b) { return a.first < b.first; });
    for (int i = 0; i < n; ++i) { cell[i] = pairs[i].first; id[i] = pairs[i].second; }
    check(cudaMemcpy(d_cell, cell.data(), n * sizeof(int), cudaMemcpyHostToDevice), "copy cell back");
    check(cudaMemcpy(d_id, id.data(), n * sizeof(int), cudaMemcpyHostToDevice), "copy id back");
}
