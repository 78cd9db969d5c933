// box-blur-tiled's runner: calls the solution's box_blur5 on the checker's images and writes
// the blurred images out. It is built with the solution and decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares every output. Boilerplate (.npy
// files, the manifest loop, CUDA errors, device buffers, NVTX ranges) lives in
// cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "box_blur.h"
#include "cudaenv_runner.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call. `out` is poisoned (NaN) with `guard` more floats after it; `in` is nullptr for an
// empty image.
static void test_case(Case& c) {
    const int w = c.scalar<int32_t>("width"), h = c.scalar<int32_t>("height");
    const size_t px = static_cast<size_t>(w) * h;
    DeviceArray<float> in(c.input<float>("image")), out(px + c.scalar<int32_t>("guard"));
    out.poison();
    {
        cudaenv::Call call(px > 0);  // on a GPU the grader checks that kernels ran in here
        box_blur5(px ? in.get() : nullptr, out.get(), w, h);
        cudaenv::sync("box_blur5");
    }
    c.output("out", out.download(out.size()));
}

// The benchmark: warm-up calls, then one timed call per output (each poisoned) on the same
// image inside bench_region; every output comes back.
static void perf_case(Case& c) {
    const int w = c.scalar<int32_t>("width"), h = c.scalar<int32_t>("height");
    const int timed = c.scalar<int32_t>("timed");
    const size_t px = static_cast<size_t>(w) * h, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> in(c.input<float>("image"));
    std::vector<DeviceArray<float>> outs;
    for (int t = 0; t < timed; ++t) {
        outs.emplace_back(px + guard);
        outs.back().poison();
    }
    for (int i = 0; i < 3; ++i) box_blur5(in.get(), outs[0].get(), w, h);
    cudaenv::sync("warm-up");
    outs[0].poison();
    cudaenv::sync("poison");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < timed; ++t) box_blur5(in.get(), outs[t].get(), w, h);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int t = 0; t < timed; ++t) c.output(cudaenv::Name("out%d", t), outs[t].download(outs[t].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
