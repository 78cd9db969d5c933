// warp-argmax's runner: calls the solution's segment_argmax on the checker's arrays and writes
// seg_max and seg_arg out. It is built with the solution and decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares every segment. Boilerplate (.npy
// files, the manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "segment_argmax.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call; seg_max and seg_arg are poisoned, each with `guard` more entries after it.
static void test_case(Case& c) {
    DeviceArray<float> x(c.input<float>("x"));
    const int n = static_cast<int>(x.size());
    const size_t segs = (x.size() + 31) / 32, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> seg_max(segs + guard);
    DeviceArray<int32_t> seg_arg(segs + guard);
    seg_max.poison();
    seg_arg.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        segment_argmax(x.get(), n, seg_max.get(), seg_arg.get());
        cudaenv::sync("segment_argmax");
    }
    c.output("seg_max", seg_max.download(seg_max.size()));
    c.output("seg_arg", seg_arg.download(seg_arg.size()));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region on the same x,
// each into its own poisoned seg_max and seg_arg; all of them come back.
static void perf_case(Case& c) {
    DeviceArray<float> x(c.input<float>("x"));
    const int n = static_cast<int>(x.size()), T = c.scalar<int32_t>("calls");
    const size_t segs = (x.size() + 31) / 32, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> warm_max(segs);
    DeviceArray<int32_t> warm_arg(segs);
    std::vector<DeviceArray<float>> maxs;
    std::vector<DeviceArray<int32_t>> args;
    for (int t = 0; t < T; ++t) {
        maxs.emplace_back(segs + guard);
        args.emplace_back(segs + guard);
        maxs.back().poison();
        args.back().poison();
    }
    for (int w = 0; w < 3; ++w) segment_argmax(x.get(), n, warm_max.get(), warm_arg.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < T; ++t) segment_argmax(x.get(), n, maxs[t].get(), args[t].get());
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int t = 0; t < T; ++t) {
        c.output(cudaenv::Name("seg_max%d", t), maxs[t].download(maxs[t].size()));
        c.output(cudaenv::Name("seg_arg%d", t), args[t].download(args[t].size()));
    }
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
