// conv1d-constant's runner: sets the checker's filters with conv1d_set_filter, calls
// conv1d_apply on its signals and writes the outputs out. It is built with the solution and
// decides nothing: check/check.py, in a sandbox of its own, draws the inputs and compares
// every output. Boilerplate (.npy files, the manifest loop, CUDA errors, device buffers, NVTX
// ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "conv1d.h"
#include "cudaenv_runner.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// Filter k of the case's weights (a filters x (2r + 1) array) into constant memory.
static void set_filter(const std::vector<float>& weights, int k, int r) {
    conv1d_set_filter(weights.data() + static_cast<size_t>(k) * (2 * r + 1), r);  // host code: no kernel
    cudaenv::sync("conv1d_set_filter");
}

// Per filter: set it, then one apply into a fresh poisoned output (with `guard` more floats
// after it); in is nullptr when n == 0.
static void test_case(Case& c) {
    const std::vector<float> x = c.input<float>("x"), weights = c.input<float>("weights");
    const int n = static_cast<int>(x.size()), r = c.scalar<int32_t>("radius");
    const int filters = static_cast<int>(c.shape("weights")[0]);
    DeviceArray<float> in(x), out(x.size() + c.scalar<int32_t>("guard"));
    for (int k = 0; k < filters; ++k) {
        set_filter(weights, k, r);
        out.poison();
        {
            cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
            conv1d_apply(n ? in.get() : nullptr, out.get(), n);
            cudaenv::sync("conv1d_apply");
        }
        c.output(cudaenv::Name("out%d", k), out.download(out.size()));
    }
}

// The benchmark: the filter set once, warm-up calls, then one timed call per output (each
// poisoned) on the same input inside bench_region; every output comes back.
static void perf_case(Case& c) {
    const std::vector<float> x = c.input<float>("x"), weights = c.input<float>("weights");
    const int n = static_cast<int>(x.size()), r = c.scalar<int32_t>("radius");
    const int timed = c.scalar<int32_t>("timed");
    const size_t guard = c.scalar<int32_t>("guard");
    set_filter(weights, 0, r);
    DeviceArray<float> in(x);
    std::vector<DeviceArray<float>> outs;
    for (int t = 0; t < timed; ++t) {
        outs.emplace_back(x.size() + guard);
        outs.back().poison();
    }
    for (int i = 0; i < 3; ++i) conv1d_apply(in.get(), outs[0].get(), n);
    cudaenv::sync("warm-up");
    outs[0].poison();
    cudaenv::sync("poison");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < timed; ++t) conv1d_apply(in.get(), outs[t].get(), n);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int t = 0; t < timed; ++t) c.output(cudaenv::Name("out%d", t), outs[t].download(outs[t].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
