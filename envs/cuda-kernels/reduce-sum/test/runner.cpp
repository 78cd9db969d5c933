// reduce-sum's runner: calls the solution's reduce_sum on the checker's arrays and writes the
// sums out. It is built with the solution and decides nothing: check/check.py, in a sandbox
// of its own, draws the inputs and compares every sum. Boilerplate (.npy files, the manifest
// loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "reduce_sum.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call on x + offset; *out is poisoned (NaN), with `guard` more floats after it.
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    const int64_t offset = c.scalar<int64_t>("offset");
    DeviceArray<float> x(c.input<float>("x")), out(1 + c.scalar<int32_t>("guard"));
    out.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        reduce_sum(x.get() + offset, n, out.get());
        cudaenv::sync("reduce_sum");
    }
    c.output("out", out.download(out.size()));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region, call r on its own
// sub-range (x + 4r, N - 8r - 1 elements) into its own poisoned result; all results come back.
static void perf_case(Case& c) {
    const std::vector<float> host = c.input<float>("x");
    const int N = static_cast<int>(host.size()), R = c.scalar<int32_t>("calls");
    DeviceArray<float> x(host), out(R + c.scalar<int32_t>("guard")), warm(1);
    out.poison();
    for (int w = 0; w < 3; ++w) reduce_sum(x.get(), N, warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r) reduce_sum(x.get() + 4 * r, N - 8 * r - 1, out.get() + r);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    c.output("out", out.download(out.size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
