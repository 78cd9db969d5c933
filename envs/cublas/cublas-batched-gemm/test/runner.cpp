// cublas-batched-gemm's runner: calls batched_gemm on the checker's cases and writes C, A and B
// (as the call left them) and the handle's settings out. It decides nothing: check/check.py,
// in a sandbox of its own, draws the matrices and compares with a double-precision product.
#include <cstdint>
#include <vector>
#include <cublas_v2.h>
#include "batched_gemm.h"
#include "cudaenv_runner.h"
#include "cudaenv_cublas.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

struct Shape {
    int m, n, k, batch;
    size_t c_size() const { return (size_t)batch * m * n; }
};

static Shape shape_of(Case& c) {
    Shape s{c.scalar<int32_t>("m"), c.scalar<int32_t>("n"), c.scalar<int32_t>("k"), c.scalar<int32_t>("batch")};
    if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 0) throw cudaenv::CaseError("bad sizes");
    return s;
}

// One call; C comes back with one m x n guard matrix after the batch, poisoned before the call.
static void test_case(Case& c) {
    const Shape s = shape_of(c);
    const size_t guard = (size_t)s.m * s.n;
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> A(c.input<float>("A")), B(c.input<float>("B")), C(s.c_size() + guard);
    C.poison();
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    c.output("settings_before", cudaenv::cublas_settings(h));
    {
        cudaenv::Call call(s.batch > 0);  // on a GPU the grader checks that kernels ran in here
        batched_gemm(h, s.m, s.n, s.k, s.batch, A.get(), B.get(), C.get());
        cudaenv::sync("batched_gemm");
    }
    c.output("C", C.download(C.size()));
    c.output("A", A.download(A.size()));
    c.output("B", B.download(B.size()));
    c.output("settings_after", cudaenv::cublas_settings(h));
}

// The benchmark: three warm-up calls into a scratch C, then `iters` timed calls on the same A
// and B, each into its own poisoned C; every C comes back.
static void perf_case(Case& c) {
    const Shape s = shape_of(c);
    const int iters = c.scalar<int32_t>("iters"), warmup = c.scalar<int32_t>("warmup");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> A(c.input<float>("A")), B(c.input<float>("B")), warm(s.c_size());
    std::vector<DeviceArray<float>> outs;
    for (int it = 0; it < iters; ++it) {
        outs.emplace_back(s.c_size());
        outs.back().poison();
    }
    for (int w = 0; w < warmup; ++w) batched_gemm(h, s.m, s.n, s.k, s.batch, A.get(), B.get(), warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int it = 0; it < iters; ++it) batched_gemm(h, s.m, s.n, s.k, s.batch, A.get(), B.get(), outs[it].get());
        cudaenv::check(cudaGetLastError(), "timed calls");
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    for (int it = 0; it < iters; ++it) c.output(cudaenv::Name("C%d", it), outs[it].download(s.c_size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
