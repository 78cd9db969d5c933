// fused-axpby's runner: calls the solution's axpby on the checker's cases and writes z out.
// It is built with the solution and decides nothing: check/check.py, in a sandbox of its own,
// draws the inputs and compares every z. Boilerplate (.npy files, the manifest loop, CUDA
// errors, device buffers, NVTX ranges) lives in the shared cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "axpby.h"
#include "cudaenv_runner.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call. x, y and z are pointers at element offsets into their buffers (the misaligned
// cases); z comes back with the `guard` elements after it, poisoned before the call.
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    const int64_t guard = c.scalar<int32_t>("guard");
    const int64_t xo = c.scalar<int64_t>("x_offset"), yo = c.scalar<int64_t>("y_offset");
    const int64_t zo = c.scalar<int64_t>("z_offset");
    DeviceArray<float> x(c.input<float>("x")), y(c.input<float>("y")), z(zo + n + guard);
    z.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        axpby(n, c.scalar<float>("alpha"), x.get() + xo, c.scalar<float>("beta"), y.get() + yo,
              z.get() + zo);
        cudaenv::sync("axpby");
    }
    c.output("z", z.download(n + guard, zo));
}

// The benchmark: warm-up calls, then one timed call per entry of n/alpha/beta inside
// bench_region, each writing its own (poisoned) output, all of which come back.
static void perf_case(Case& c) {
    const std::vector<int32_t> ns = c.input<int32_t>("n");
    const std::vector<float> alphas = c.input<float>("alpha"), betas = c.input<float>("beta");
    const int64_t guard = c.scalar<int32_t>("guard");
    DeviceArray<float> x(c.input<float>("x")), y(c.input<float>("y")), warm(x.size());
    std::vector<DeviceArray<float>> zs;
    for (int32_t n : ns) {
        zs.emplace_back(n + guard);
        zs.back().poison();
    }
    for (int w = 0; w < 3; ++w) axpby((int)x.size(), 1.0f + w, x.get(), 0.5f, y.get(), warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (size_t r = 0; r < ns.size(); ++r)
            axpby(ns[r], alphas[r], x.get(), betas[r], y.get(), zs[r].get());
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (size_t r = 0; r < ns.size(); ++r) c.output(cudaenv::Name("z%zu", r), zs[r].download(ns[r] + guard));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
