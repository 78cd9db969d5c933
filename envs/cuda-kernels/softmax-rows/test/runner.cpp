// softmax-rows's runner: calls the solution's softmax_rows on the checker's matrices and
// writes out (and, in the tests, the input as the call left it) back. It is built with the
// solution and decides nothing: check/check.py, in a sandbox of its own, draws the inputs and
// compares every output. Boilerplate (.npy files, the manifest loop, CUDA errors, device
// buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "softmax.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call; out is poisoned (NaN), with `guard` more floats after it.
static void test_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("in");
    const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
    const size_t n = static_cast<size_t>(rows) * cols;
    DeviceArray<float> in(c.input<float>("in")), out(n + c.scalar<int32_t>("guard"));
    out.poison();
    {
        cudaenv::Call call(rows > 0);  // on a GPU the grader checks that kernels ran in here
        softmax_rows(in.get(), out.get(), rows, cols);
        cudaenv::sync("softmax_rows");
    }
    c.output("out", out.download(out.size()));
    c.output("in_after", in.download(n), shape);
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region, call r on rows
// r .. r + rows - 1 of the input into its own poisoned output; every output comes back.
static void perf_case(Case& c) {
    const int rows = c.scalar<int32_t>("rows"), cols = static_cast<int>(c.shape("in")[1]);
    const int R = c.scalar<int32_t>("calls");
    const size_t n = static_cast<size_t>(rows) * cols, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> in(c.input<float>("in")), warm(n);
    std::vector<DeviceArray<float>> outs;
    for (int r = 0; r < R; ++r) {
        outs.emplace_back(n + guard);
        outs.back().poison();
    }
    for (int w = 0; w < 3; ++w) softmax_rows(in.get(), warm.get(), rows, cols);
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r) softmax_rows(in.get() + static_cast<size_t>(r) * cols, outs[r].get(), rows, cols);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < R; ++r) c.output(cudaenv::Name("out%d", r), outs[r].download(outs[r].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
