// cublas-sgemm-bias' runner: calls sgemm_bias on the checker's cases and writes C, the inputs
// (as the call left them) and the handle's settings out. It decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares with a double-precision product.
#include <cstdint>
#include <vector>
#include <cublas_v2.h>
#include "cudaenv_runner.h"
#include "cudaenv_cublas.h"
#include "sgemm_bias.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

struct Inputs {
    int m, n, k;
    float alpha;
    DeviceArray<float> A, B, bias;
    explicit Inputs(Case& c)
        : m(c.scalar<int32_t>("m")), n(c.scalar<int32_t>("n")), k(c.scalar<int32_t>("k")),
          alpha(c.scalar<float>("alpha")), A(c.input<float>("A")), B(c.input<float>("B")),
          bias(c.input<float>("bias")) {}
    size_t c_size() const { return (size_t)m * n; }
    void call(cublasHandle_t h, float* C) { sgemm_bias(h, m, n, k, alpha, A.get(), B.get(), bias.get(), C); }
};

// One call; C comes back with `guard` elements after it, poisoned before the call.
static void test_case(Case& c) {
    Inputs in(c);
    const size_t guard = (size_t)c.scalar<int32_t>("guard");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> C(in.c_size() + guard);
    C.poison();
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    c.output("settings_before", cudaenv::cublas_settings(h));
    {
        // on a GPU the grader checks that kernels ran in here (with k == 0, C is the bias
        // broadcast, which copies alone can do)
        cudaenv::Call call(in.k > 0);
        in.call(h, C.get());
        cudaenv::sync("sgemm_bias");
    }
    c.output("C", C.download(C.size()));
    c.output("A", in.A.download(in.A.size()));
    c.output("B", in.B.download(in.B.size()));
    c.output("bias", in.bias.download(in.bias.size()));
    c.output("settings_after", cudaenv::cublas_settings(h));
}

// The benchmark: three warm-up calls into a scratch C, then `iters` timed calls on the same
// inputs, each into its own poisoned C; every C comes back.
static void perf_case(Case& c) {
    Inputs in(c);
    const int iters = c.scalar<int32_t>("iters"), warmup = c.scalar<int32_t>("warmup");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> warm(in.c_size());
    std::vector<DeviceArray<float>> outs;
    for (int it = 0; it < iters; ++it) {
        outs.emplace_back(in.c_size());
        outs.back().poison();
    }
    for (int w = 0; w < warmup; ++w) in.call(h, warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int it = 0; it < iters; ++it) in.call(h, outs[it].get());
        cudaenv::check(cudaGetLastError(), "timed calls");
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    for (int it = 0; it < iters; ++it) c.output(cudaenv::Name("C%d", it), outs[it].download(in.c_size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
