// sgemm-tiled's runner: calls the solution's sgemm on the checker's matrices and writes C out.
// It is built with the solution and decides nothing: check/check.py, in a sandbox of its own,
// draws the inputs and compares every element of every C. Boilerplate (.npy files, the
// manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "sgemm.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call, C = A * B; C is poisoned (NaN), with `guard` more floats after it.
static void test_case(Case& c) {
    const std::vector<int64_t> sa = c.shape("A"), sb = c.shape("B");
    if (sa.size() != 2 || sb.size() != 2 || sa[1] != sb[0]) throw cudaenv::CaseError("A and B do not chain");
    const int M = static_cast<int>(sa[0]), K = static_cast<int>(sa[1]), N = static_cast<int>(sb[1]);
    const int64_t guard = c.scalar<int32_t>("guard");
    DeviceArray<float> a(c.input<float>("A")), b(c.input<float>("B")), C(static_cast<size_t>(M) * N + guard);
    C.poison();
    {
        cudaenv::Call call;  // on a GPU the grader checks that kernels ran in here
        sgemm(M, N, K, a.get(), b.get(), C.get());
        cudaenv::sync("sgemm");
    }
    c.output("C", C.download(C.size()));
}

// The benchmark on S x S matrices: warm-up calls, then `calls` timed calls inside
// bench_region (even calls A * B, odd calls B * A), each into its own poisoned C; every C
// comes back whole.
static void perf_case(Case& c) {
    const int S = static_cast<int>(c.shape("A")[0]), R = c.scalar<int32_t>("calls");
    const size_t n = static_cast<size_t>(S) * S, guard = c.scalar<int32_t>("guard");
    DeviceArray<float> a(c.input<float>("A")), b(c.input<float>("B")), warm(n);
    std::vector<DeviceArray<float>> cs;
    for (int r = 0; r < R; ++r) {
        cs.emplace_back(n + guard);
        cs.back().poison();
    }
    for (int w = 0; w < 3; ++w) sgemm(S, S, S, a.get(), b.get(), warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r) {
            if (r % 2 == 0) sgemm(S, S, S, a.get(), b.get(), cs[r].get());
            else sgemm(S, S, S, b.get(), a.get(), cs[r].get());
        }
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < R; ++r) c.output(cudaenv::Name("C%d", r), cs[r].download(cs[r].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
