// scan-inclusive's runner: calls the solution's inclusive_scan on the checker's arrays and
// writes the scans (and, in the tests, the input as the call left it) out. It is built with
// the solution and decides nothing: check/check.py, in a sandbox of its own, draws the inputs
// and compares every output. Boilerplate (.npy files, the manifest loop, CUDA errors, device
// buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "scan.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call. in and out are pointers at element offsets into poisoned buffers (the misaligned
// case); out comes back with the `guard` ints after it, and in as the call left it.
static void test_case(Case& c) {
    const std::vector<int32_t> host = c.input<int32_t>("in");
    const int n = static_cast<int>(host.size());
    const int64_t guard = c.scalar<int32_t>("guard");
    const int64_t io = c.scalar<int64_t>("in_offset"), oo = c.scalar<int64_t>("out_offset");
    DeviceArray<int32_t> in(io + n + guard), out(oo + n + guard);
    in.poison();
    in.upload(host.data(), host.size(), io);
    out.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        inclusive_scan(in.get() + io, out.get() + oo, n);
        cudaenv::sync("inclusive_scan");
    }
    c.output("out", out.download(n + guard, oo));
    c.output("in_after", in.download(n, io));
}

// The benchmark: warm-up calls, then one timed call per entry of n/in_offset inside
// bench_region, each writing its own (poisoned) output, all of which come back.
static void perf_case(Case& c) {
    const std::vector<int32_t> ns = c.input<int32_t>("n");
    const std::vector<int64_t> offsets = c.input<int64_t>("in_offset");
    const int64_t guard = c.scalar<int32_t>("guard");
    DeviceArray<int32_t> in(c.input<int32_t>("in")), warm(in.size());
    std::vector<DeviceArray<int32_t>> outs;
    for (int32_t n : ns) {
        outs.emplace_back(n + guard);
        outs.back().poison();
    }
    for (int w = 0; w < 3; ++w) inclusive_scan(in.get(), warm.get(), static_cast<int>(in.size()));
    cudaenv::sync("warm-up");
    {
        cudaenv::Range region("bench_region");
        for (size_t r = 0; r < ns.size(); ++r) inclusive_scan(in.get() + offsets[r], outs[r].get(), ns[r]);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (size_t r = 0; r < ns.size(); ++r) c.output(cudaenv::Name("out%zu", r), outs[r].download(ns[r] + guard));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
