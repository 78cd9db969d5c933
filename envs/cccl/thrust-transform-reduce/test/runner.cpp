// thrust-transform-reduce's runner: calls mean_and_variance on the checker's cases and writes
// the two results out. It decides nothing: check/check.py, in a sandbox of its own, draws the
// values and compares with its own high-precision moments.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "moments.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call on the first n values of x; x holds a poison value after them (1e30: reading it
// ruins both results). The results start as -1, so one never written shows.
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    DeviceArray<float> x(c.input<float>("x"));
    cudaenv::check(cudaDeviceSynchronize(), "upload");  // done even if the solution uses its own stream
    double mean = -1.0, variance = -1.0;
    {
        cudaenv::Call call(n > 1);  // on a GPU the grader checks that kernels ran in here
        mean_and_variance(x.get(), n, &mean, &variance);
    }
    cudaenv::sync("mean_and_variance");
    c.output_scalar("mean", mean);
    c.output_scalar("variance", variance);
}

// The benchmark: three warm-up calls, then each timed call on its own values; every call's
// results come back.
static void perf_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("x");  // (timed, n)
    if (shape.size() != 2 || shape[0] < 1) throw cudaenv::CaseError("x is not (timed, n)");
    const int timed = (int)shape[0], n = (int)shape[1], warmup = c.scalar<int32_t>("warmup");
    const std::vector<float> x = c.input<float>("x");
    std::vector<DeviceArray<float>> d;
    for (int r = 0; r < timed; ++r) {
        d.emplace_back((size_t)n);
        d.back().upload(x.data() + (size_t)r * n, (size_t)n);
    }
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    double m = 0.0, v = 0.0;
    for (int w = 0; w < warmup; ++w) mean_and_variance(d[w % timed].get(), n, &m, &v);
    cudaenv::sync("warm-up");
    std::vector<double> mean(timed, -1.0), variance(timed, -1.0);
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) mean_and_variance(d[r].get(), n, &mean[r], &variance[r]);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    c.output("mean", mean);
    c.output("variance", variance);
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
