// histogram-256's runner: calls the solution's histogram256 on the checker's bytes and writes
// the bins out. It is built with the solution and decides nothing: check/check.py, in a
// sandbox of its own, draws the inputs and compares every histogram. Boilerplate (.npy files,
// the manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "histogram.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call on the bytes placed `offset` bytes into a buffer of other bytes (a misaligned
// start); bins has 256 counters, then `guard` more words, all poisoned.
static void test_case(Case& c) {
    const std::vector<uint8_t> data = c.input<uint8_t>("data");
    const size_t n = data.size(), off = static_cast<size_t>(c.scalar<int64_t>("offset"));
    DeviceArray<uint8_t> buf(n + off + 16);
    cudaenv::check(cudaMemset(buf.get(), 0x3C, buf.size()), "memset");
    buf.upload(data.data(), n, off);
    DeviceArray<unsigned> bins(256 + c.scalar<int32_t>("guard"));
    bins.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        histogram256(buf.get() + off, n, bins.get());
        cudaenv::sync("histogram256");
    }
    c.output("bins", bins.download(bins.size()));
}

// The benchmark: warm-up calls, then `calls` timed calls inside bench_region, call r on its own
// sub-range (bytes 16r .. 16r + N - 17r) into its own poisoned bins; all bins come back.
static void perf_case(Case& c) {
    const std::vector<uint8_t> data = c.input<uint8_t>("data");
    const size_t N = data.size(), slot = 256 + c.scalar<int32_t>("guard");
    const int R = c.scalar<int32_t>("calls");
    DeviceArray<uint8_t> d(data);
    DeviceArray<unsigned> bins(slot * R), warm(slot);
    bins.poison();
    for (int w = 0; w < 3; ++w) histogram256(d.get(), N, warm.get());
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < R; ++r) histogram256(d.get() + 16 * r, N - 17 * r, bins.get() + slot * r);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    c.output("bins", bins.download(bins.size()), {R, static_cast<int64_t>(slot)});
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
