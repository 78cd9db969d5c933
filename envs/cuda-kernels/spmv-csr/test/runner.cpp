// spmv-csr's runner: calls the solution's spmv_csr on the checker's CSR matrices and writes y
// out. It is built with the solution and decides nothing: check/check.py, in a sandbox of its
// own, draws the inputs and compares every y. Boilerplate (.npy files, the manifest loop, CUDA
// errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "spmv_csr.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// The matrix and x on the device. col_idx and vals are passed as nullptr when nnz == 0 (the
// header allows it, so the tests do it).
struct Csr {
    DeviceArray<int32_t> row_ptr, col_idx;
    DeviceArray<float> vals, x;
    int n_rows, n_cols, nnz;
    explicit Csr(Case& c)
        : row_ptr(c.input<int32_t>("row_ptr")), col_idx(c.input<int32_t>("col_idx")),
          vals(c.input<float>("vals")), x(c.input<float>("x")),
          n_rows(static_cast<int>(row_ptr.size()) - 1), n_cols(static_cast<int>(x.size())),
          nnz(static_cast<int>(col_idx.size())) {}
    void spmv(float* y) const {
        spmv_csr(n_rows, n_cols, nnz, row_ptr.get(), nnz ? col_idx.get() : nullptr,
                 nnz ? vals.get() : nullptr, x.get(), y);
    }
};

// One call; y is poisoned (NaN), with `guard` more floats after it.
static void test_case(Case& c) {
    const Csr m(c);
    DeviceArray<float> y(m.n_rows + c.scalar<int32_t>("guard"));
    y.poison();
    {
        cudaenv::Call call(m.n_rows > 0);  // on a GPU the grader checks that kernels ran in here
        m.spmv(y.get());
        cudaenv::sync("spmv_csr");
    }
    c.output("y", y.download(y.size()));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region on the same
// matrix and x, each into its own poisoned y; every y comes back.
static void perf_case(Case& c) {
    const Csr m(c);
    const int T = c.scalar<int32_t>("calls");
    const size_t guard = c.scalar<int32_t>("guard");
    DeviceArray<float> warm(m.n_rows);
    std::vector<DeviceArray<float>> ys;
    for (int t = 0; t < T; ++t) {
        ys.emplace_back(m.n_rows + guard);
        ys.back().poison();
    }
    for (int w = 0; w < 3; ++w) m.spmv(warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < T; ++t) m.spmv(ys[t].get());
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int t = 0; t < T; ++t) c.output(cudaenv::Name("y%d", t), ys[t].download(ys[t].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
