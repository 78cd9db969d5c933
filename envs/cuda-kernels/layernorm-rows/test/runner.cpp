// layernorm-rows's runner: calls the solution's layernorm_rows on the checker's matrices and
// writes y (and, in the tests, the inputs as the call left them) out. It is built with the
// solution and decides nothing: check/check.py, in a sandbox of its own, draws the inputs and
// compares every output. Boilerplate (.npy files, the manifest loop, CUDA errors, device
// buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "layernorm.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call; y is poisoned, with `guard` more floats after it.
static void test_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("x");
    const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
    DeviceArray<float> x(c.input<float>("x")), gamma(c.input<float>("gamma"));
    DeviceArray<float> beta(c.input<float>("beta"));
    const size_t n = static_cast<size_t>(rows) * cols;
    DeviceArray<float> y(n + c.scalar<int32_t>("guard"));
    y.poison();
    {
        cudaenv::Call call(rows > 0);  // on a GPU the grader checks that kernels ran in here
        layernorm_rows(x.get(), gamma.get(), beta.get(), y.get(), rows, cols, c.scalar<float>("eps"));
        cudaenv::sync("layernorm_rows");
    }
    c.output("y", y.download(y.size()));
    c.output("x_after", x.download(n), shape);
    c.output("gamma_after", gamma.download(cols));
    c.output("beta_after", beta.download(cols));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region, call r on rows
// r .. r + rows - 1 of x into its own poisoned y; every y comes back.
static void perf_case(Case& c) {
    const int rows = c.scalar<int32_t>("rows"), cols = static_cast<int>(c.shape("x")[1]);
    const int R = c.scalar<int32_t>("calls");
    const float eps = c.scalar<float>("eps");
    const size_t n = static_cast<size_t>(rows) * cols, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> x(c.input<float>("x")), gamma(c.input<float>("gamma"));
    DeviceArray<float> beta(c.input<float>("beta")), warm(n);
    std::vector<DeviceArray<float>> ys;
    for (int r = 0; r < R; ++r) {
        ys.emplace_back(n + guard);
        ys.back().poison();
    }
    for (int w = 0; w < 3; ++w) layernorm_rows(x.get(), gamma.get(), beta.get(), warm.get(), rows, cols, eps);
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r)
            layernorm_rows(x.get() + static_cast<size_t>(r) * cols, gamma.get(), beta.get(), ys[r].get(), rows, cols, eps);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < R; ++r) c.output(cudaenv::Name("y%d", r), ys[r].download(ys[r].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
