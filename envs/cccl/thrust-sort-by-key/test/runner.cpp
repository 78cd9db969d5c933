// thrust-sort-by-key's runner: calls sort_by_cell on the checker's cases and writes both
// arrays (as the call left them, sentinels included) out. It decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares with a stable sort.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "cell_sort.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// The arrays as the call left them. The sort must be in place when the function returns:
// cudaMemcpy orders after the default stream's work, and nothing else synchronizes first.
static void write(Case& c, const char* suffix, const DeviceArray<int>& cell, const DeviceArray<int>& id) {
    c.output(cudaenv::Name("cell%s", suffix), cell.download(cell.size()));
    c.output(cudaenv::Name("id%s", suffix), id.download(id.size()));
}

// One call on n pairs; each array holds a sentinel after its n elements (not to be touched).
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    DeviceArray<int> cell(c.input<int32_t>("cell")), id(c.input<int32_t>("id"));
    cudaenv::check(cudaDeviceSynchronize(), "upload");  // done even if the solution uses its own stream
    {
        cudaenv::Call call(n > 1);  // on a GPU the grader checks that kernels ran in here
        sort_by_cell(cell.get(), id.get(), n);
    }
    cudaenv::check(cudaGetLastError(), "sort_by_cell");
    write(c, "", cell, id);  // before any synchronization of ours
    cudaenv::sync("sort_by_cell");
}

// The benchmark: warm-up sorts on a scratch copy, then each timed call sorts its own pairs in
// place; every sorted array comes back.
static void perf_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("cell");  // (timed, n)
    if (shape.size() != 2 || shape[0] < 1) throw cudaenv::CaseError("cell is not (timed, n)");
    const int timed = (int)shape[0], n = (int)shape[1], warmup = c.scalar<int32_t>("warmup");
    const std::vector<int32_t> cells = c.input<int32_t>("cell"), ids = c.input<int32_t>("id");
    if (cells.size() != ids.size()) throw cudaenv::CaseError("cell and id differ in shape");
    std::vector<DeviceArray<int>> cell, id;
    for (int r = 0; r < timed; ++r) {
        cell.emplace_back((size_t)n);
        id.emplace_back((size_t)n);
    }
    for (int w = 0; w < warmup; ++w) {  // sorts of the inputs, on the first pair of arrays
        cell[0].upload(cells.data() + (size_t)(w % timed) * n, (size_t)n);
        id[0].upload(ids.data() + (size_t)(w % timed) * n, (size_t)n);
        cudaenv::check(cudaDeviceSynchronize(), "upload");
        sort_by_cell(cell[0].get(), id[0].get(), n);
    }
    cudaenv::sync("warm-up");
    for (int r = 0; r < timed; ++r) {
        cell[r].upload(cells.data() + (size_t)r * n, (size_t)n);
        id[r].upload(ids.data() + (size_t)r * n, (size_t)n);
    }
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) sort_by_cell(cell[r].get(), id[r].get(), n);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < timed; ++r) write(c, cudaenv::Name("%d", r), cell[r], id[r]);
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
