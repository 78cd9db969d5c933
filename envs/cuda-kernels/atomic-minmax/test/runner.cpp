// atomic-minmax's runner: calls the solution's group_minmax on the checker's cases and writes
// the gmin/gmax tables out. It is built with the solution and decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares every table. Boilerplate (.npy files,
// the manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "group_minmax.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// What a table holds on entry: g entries of `fill` (garbage the solution must overwrite), then
// `guard` poisoned entries it must not write.
static std::vector<int> garbage(int g, int fill, int guard) {
    std::vector<int> host(static_cast<size_t>(g) + guard, cudaenv::poison_value<int>());
    for (int i = 0; i < g; ++i) host[i] = fill;
    return host;
}

// One call; keys and vals are nullptr when n == 0.
static void test_case(Case& c) {
    const std::vector<int> keys = c.input<int32_t>("keys"), vals = c.input<int32_t>("vals");
    const int n = static_cast<int>(keys.size()), g = c.scalar<int32_t>("num_groups");
    const int guard = c.scalar<int32_t>("guard");
    DeviceArray<int> d_keys(keys), d_vals(vals);
    DeviceArray<int> gmin(garbage(g, c.scalar<int32_t>("min_fill"), guard));
    DeviceArray<int> gmax(garbage(g, c.scalar<int32_t>("max_fill"), guard));
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        group_minmax(n ? d_keys.get() : nullptr, n ? d_vals.get() : nullptr, n, g, gmin.get(),
                     gmax.get());
        cudaenv::sync("group_minmax");
    }
    c.output("gmin", gmin.download(gmin.size()));
    c.output("gmax", gmax.download(gmax.size()));
}

// The benchmark: warm-up calls, then `timed` calls on the same input inside bench_region, each
// writing its own tables (all refilled with garbage after the warm-up), all of which come back.
static void perf_case(Case& c) {
    const std::vector<int> keys = c.input<int32_t>("keys");
    const int n = static_cast<int>(keys.size()), g = c.scalar<int32_t>("num_groups");
    const int timed = c.scalar<int32_t>("timed"), guard = c.scalar<int32_t>("guard");
    const std::vector<int> min_garbage = garbage(g, c.scalar<int32_t>("min_fill"), guard);
    const std::vector<int> max_garbage = garbage(g, c.scalar<int32_t>("max_fill"), guard);
    DeviceArray<int> d_keys(keys), d_vals(c.input<int32_t>("vals"));
    std::vector<DeviceArray<int>> mins, maxs;
    for (int t = 0; t < timed; ++t) {
        mins.emplace_back(min_garbage.size());
        maxs.emplace_back(max_garbage.size());
    }
    for (int w = 0; w < 3; ++w) group_minmax(d_keys.get(), d_vals.get(), n, g, mins[0].get(), maxs[0].get());
    cudaenv::sync("warm-up");
    for (int t = 0; t < timed; ++t) {
        mins[t].upload(min_garbage.data(), min_garbage.size());
        maxs[t].upload(max_garbage.data(), max_garbage.size());
    }
    cudaenv::sync("refill");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < timed; ++t) group_minmax(d_keys.get(), d_vals.get(), n, g, mins[t].get(), maxs[t].get());
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int t = 0; t < timed; ++t) {
        c.output(cudaenv::Name("gmin%d", t), mins[t].download(mins[t].size()));
        c.output(cudaenv::Name("gmax%d", t), maxs[t].download(maxs[t].size()));
    }
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
