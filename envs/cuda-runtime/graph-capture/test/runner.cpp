// graph-capture's runner: calls the solution's relax_iterations on the checker's cases (on a
// non-blocking stream of its own) and writes out x, tmp's tail and whether the stream was
// left capturing. It is built with the solution and decides nothing: check/check.py, in a
// sandbox of its own, draws the inputs and compares with its own relaxation.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "graph_relax.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// The caller's non-blocking stream (one for the whole run).
static cudaStream_t stream()
{
    static const cudaStream_t s = [] {
        cudaStream_t made;
        cudaenv::check(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return made;
    }();
    return s;
}

// Whether the solution left the stream in capture mode (1) or not (0).
static int32_t capturing(cudaStream_t s)
{
    cudaStreamCaptureStatus status;
    cudaenv::check(cudaStreamIsCapturing(s, &status), "cudaStreamIsCapturing");
    return status != cudaStreamCaptureStatusNone;
}

// One call. x holds n values then a poisoned guard zone, tmp is poisoned throughout; x and
// tmp's guard zone come back.
static void test_case(Case& c)
{
    const int n = c.scalar<int32_t>("n"), iters = c.scalar<int32_t>("iters");
    const int64_t guard = c.scalar<int32_t>("guard");
    const std::vector<float> x0 = c.input<float>("x");
    DeviceArray<float> x(n + guard), tmp(n + guard);
    x.poison();
    tmp.poison();
    x.upload(x0.data(), n);
    cudaenv::sync("setup");  // the solution's stream does not wait for the legacy default stream
    const cudaStream_t s = stream();
    int32_t left_capturing;
    {
        cudaenv::Call call(iters > 0);  // on a GPU the grader checks that kernels ran in here
        relax_iterations(x.get(), tmp.get(), n, iters, s);
        cudaenv::check(cudaGetLastError(), "relax_iterations");
        left_capturing = capturing(s);
        cudaenv::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        cudaenv::sync("relax_iterations");
    }
    c.output_scalar("capturing", left_capturing);
    c.output("x", x.download(n + guard));
    c.output("tmp_guard", tmp.download(guard, n));
}

// The benchmark: warm-up calls, then one timed call per input inside bench_region, each on
// its own x (tmp shared), all of which come back.
static void perf_case(Case& c)
{
    const int n = c.scalar<int32_t>("n"), iters = c.scalar<int32_t>("iters");
    const int timed = c.scalar<int32_t>("timed");
    const std::vector<float> all = c.input<float>("x");  // timed rows of n
    if ((int64_t)all.size() != (int64_t)timed * n) throw cudaenv::CaseError("x is not timed x n");
    DeviceArray<float> tmp(n), warm(n);
    std::vector<DeviceArray<float>> xs;
    for (int r = 0; r < timed; ++r) {
        xs.emplace_back(n);
        xs.back().upload(all.data() + (size_t)r * n, n);
    }
    warm.upload(all.data(), n);
    const cudaStream_t s = stream();
    cudaenv::sync("setup");  // the solution's stream does not wait for these uploads
    for (int w = 0; w < 3; ++w) relax_iterations(warm.get(), tmp.get(), n, iters, s);
    cudaenv::check(cudaGetLastError(), "warm-up");
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) relax_iterations(xs[r].get(), tmp.get(), n, iters, s);
        cudaenv::check(cudaStreamSynchronize(s), "timed calls");
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::check(cudaGetLastError(), "timed calls");
    c.output_scalar("capturing", capturing(s));
    for (int r = 0; r < timed; ++r) c.output(cudaenv::Name("x%d", r), xs[r].download(n));
}

int main(int argc, char** argv)
{
    cudaSetDevice(0);  // an error here shows in the first case
    return cudaenv::run(argc, argv, test_case, perf_case);
}
