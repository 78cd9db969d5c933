// cublas-gemv-rows' runner: calls gemv_rows on the checker's cases and writes y, A and x (as
// the call left them) and the handle's settings out. It decides nothing: check/check.py, in a
// sandbox of its own, draws the inputs and compares with a double-precision product.
#include <cstdint>
#include <vector>
#include <cublas_v2.h>
#include "cudaenv_runner.h"
#include "cudaenv_cublas.h"
#include "gemv_rows.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call; y comes back with `guard` elements after it, poisoned before the call.
static void test_case(Case& c) {
    const int rows = c.scalar<int32_t>("rows"), cols = c.scalar<int32_t>("cols");
    const size_t guard = (size_t)c.scalar<int32_t>("guard");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> A(c.input<float>("A")), x(c.input<float>("x")), y((size_t)rows + guard);
    y.poison();
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    c.output("settings_before", cudaenv::cublas_settings(h));
    {
        // on a GPU the grader checks that kernels ran in here (cols == 0 is a memset)
        cudaenv::Call call(rows > 0 && cols > 0);
        gemv_rows(h, rows, cols, A.get(), x.get(), y.get());
        cudaenv::sync("gemv_rows");
    }
    c.output("y", y.download(y.size()));
    c.output("A", A.download(A.size()));
    c.output("x", x.download(x.size()));
    c.output("settings_after", cudaenv::cublas_settings(h));
}

// The benchmark: three warm-up calls into a scratch y, then `iters` timed calls on the same A
// and x, each into its own poisoned y; every y comes back.
static void perf_case(Case& c) {
    const int rows = c.scalar<int32_t>("rows"), cols = c.scalar<int32_t>("cols");
    const int iters = c.scalar<int32_t>("iters"), warmup = c.scalar<int32_t>("warmup");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> A(c.input<float>("A")), x(c.input<float>("x")), warm((size_t)rows);
    std::vector<DeviceArray<float>> outs;
    for (int it = 0; it < iters; ++it) {
        outs.emplace_back((size_t)rows);
        outs.back().poison();
    }
    for (int w = 0; w < warmup; ++w) gemv_rows(h, rows, cols, A.get(), x.get(), warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int it = 0; it < iters; ++it) gemv_rows(h, rows, cols, A.get(), x.get(), outs[it].get());
        cudaenv::check(cudaGetLastError(), "timed calls");
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    for (int it = 0; it < iters; ++it) c.output(cudaenv::Name("y%d", it), outs[it].download((size_t)rows));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
