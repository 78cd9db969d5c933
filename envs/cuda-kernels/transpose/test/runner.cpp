// transpose's runner: calls the solution's transpose on the checker's matrices and writes the
// transposes out. It is built with the solution and decides nothing: check/check.py, in a
// sandbox of its own, draws the inputs and compares every output. Boilerplate (.npy files, the
// manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "transpose.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call. in and out are pointers at element offsets into their buffers (the unaligned
// case); out is poisoned (NaN) and comes back with the `guard` floats after it.
static void test_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("in");
    const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
    const size_t n = static_cast<size_t>(rows) * cols, guard = c.scalar<int32_t>("guard");
    const int64_t io = c.scalar<int64_t>("in_offset"), oo = c.scalar<int64_t>("out_offset");
    const std::vector<float> host = c.input<float>("in");
    DeviceArray<float> in(io + n), out(oo + n + guard);
    in.upload(host.data(), n, io);
    out.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        transpose(in.get() + io, out.get() + oo, rows, cols);
        cudaenv::sync("transpose");
    }
    c.output("out", out.download(n + guard, oo));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region on the same
// buffer, viewed alternately as rows[0] x (n / rows[0]) and rows[1] x (n / rows[1]), each into
// its own poisoned output; every output comes back.
static void perf_case(Case& c) {
    const std::vector<int32_t> rows = c.input<int32_t>("rows");
    const int R = c.scalar<int32_t>("calls");
    DeviceArray<float> in(c.input<float>("in")), warm(in.size());
    const size_t n = in.size(), guard = c.scalar<int32_t>("guard");
    std::vector<DeviceArray<float>> outs;
    for (int r = 0; r < R; ++r) {
        outs.emplace_back(n + guard);
        outs.back().poison();
    }
    const int r0 = rows[0], c0 = static_cast<int>(n / rows[0]);
    for (int w = 0; w < 3; ++w) transpose(in.get(), warm.get(), r0, c0);
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r) {
            const int m = rows[r % 2];
            transpose(in.get(), outs[r].get(), m, static_cast<int>(n / m));
        }
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < R; ++r) c.output(cudaenv::Name("out%d", r), outs[r].download(outs[r].size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
