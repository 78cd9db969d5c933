// cub-device-scan's runner: calls exclusive_offsets on the checker's cases and writes the
// outputs out. It decides nothing: check/check.py, in a sandbox of its own, draws the inputs
// and compares every output with a 64-bit host scan.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "prefix_offsets.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// The non-blocking stream the prompt promises (one for the whole run, as a caller's would be).
static cudaStream_t stream() {
    static cudaStream_t s = [] {
        cudaStream_t made = nullptr;
        cudaenv::check(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return made;
    }();
    return s;
}

// One call. x holds the n inputs and one element past them (a large sentinel the solution
// must not read); out comes back with the `guard` elements after it, poisoned before the call.
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    const int64_t guard = c.scalar<int32_t>("guard");
    cudaStream_t s = stream();
    DeviceArray<int> x(c.input<int32_t>("x"));
    DeviceArray<long long> out(n + guard);
    out.poison();
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    {
        cudaenv::Call call(n > 1);  // on a GPU the grader checks that kernels ran in here
        exclusive_offsets(x.get(), out.get(), n, s);
        cudaenv::check(cudaGetLastError(), "exclusive_offsets");
        cudaenv::check(cudaStreamSynchronize(s), "exclusive_offsets");
        cudaenv::sync("exclusive_offsets");
    }
    c.output("out", out.download(n + guard));
}

// The benchmark: each timed call scans its own input into its own (poisoned) output, all of
// which come back; the warm-up calls come first, their output poisoned again afterwards.
static void perf_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("x");  // (timed, n)
    if (shape.size() != 2 || shape[0] < 1) throw cudaenv::CaseError("x is not (timed, n)");
    const int timed = (int)shape[0], n = (int)shape[1], warmup = c.scalar<int32_t>("warmup");
    const int64_t guard = c.scalar<int32_t>("guard");
    const std::vector<int32_t> x = c.input<int32_t>("x");
    cudaStream_t s = stream();
    std::vector<DeviceArray<int>> in;
    std::vector<DeviceArray<long long>> outs;
    for (int r = 0; r < timed; ++r) {
        in.emplace_back((size_t)n);
        in.back().upload(x.data() + (size_t)r * n, (size_t)n);
        outs.emplace_back((size_t)n + guard);
    }
    for (int w = 0; w < warmup; ++w) exclusive_offsets(in[w % timed].get(), outs[0].get(), n, s);
    cudaenv::check(cudaStreamSynchronize(s), "warm-up");
    cudaenv::sync("warm-up");
    for (auto& o : outs) o.poison();
    cudaenv::check(cudaDeviceSynchronize(), "poison");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) exclusive_offsets(in[r].get(), outs[r].get(), n, s);
        cudaenv::check(cudaStreamSynchronize(s), "timed calls");
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < timed; ++r) c.output(cudaenv::Name("out%d", r), outs[r].download((size_t)n + guard));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
