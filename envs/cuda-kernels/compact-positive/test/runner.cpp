// compact-positive's runner: calls the solution's compact_positive on the checker's arrays and
// writes the count and the compacted values out. It is built with the solution and decides
// nothing: check/check.py, in a sandbox of its own, draws the inputs and compares every
// output. Boilerplate (.npy files, the manifest loop, CUDA errors, device buffers, NVTX
// ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "compact.h"
#include "cudaenv_runner.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// What comes back of one call: the count it wrote, out[0 .. count) (clamped to [0, n]: the
// checker wants exactly count entries) and the guard after out's n entries.
static void write_outputs(Case& c, const char* suffix, int count, const DeviceArray<float>& out,
                          size_t n, size_t guard) {
    const size_t kept = count < 0 ? 0 : (static_cast<size_t>(count) > n ? n : count);
    c.output(cudaenv::Name("out%s", suffix), out.download(kept));
    c.output(cudaenv::Name("guard%s", suffix), out.download(guard, n));
}

// One call. out has room for n floats (poisoned), then `guard` more; count starts poisoned;
// in is nullptr when n == 0.
static void test_case(Case& c) {
    const std::vector<float> in = c.input<float>("in");
    const size_t n = in.size(), guard = c.scalar<int32_t>("guard");
    DeviceArray<float> d_in(in), out(n + guard);
    DeviceArray<int> count(1);
    out.poison();
    count.poison();
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        compact_positive(n ? d_in.get() : nullptr, static_cast<int>(n), out.get(), count.get());
        cudaenv::sync("compact_positive");
    }
    const int got = count.download(1)[0];
    c.output_scalar("count", got);
    write_outputs(c, "", got, out, n, guard);
}

// The benchmark: warm-up calls, then one timed call per output (each poisoned, with its own
// count) on the same input inside bench_region; every output comes back.
static void perf_case(Case& c) {
    const std::vector<float> in = c.input<float>("in");
    const size_t n = in.size(), guard = c.scalar<int32_t>("guard");
    const int timed = c.scalar<int32_t>("timed");
    DeviceArray<float> d_in(in);
    DeviceArray<int> counts(timed);
    std::vector<DeviceArray<float>> outs;
    for (int t = 0; t < timed; ++t) outs.emplace_back(n + guard);
    for (int w = 0; w < 3; ++w) compact_positive(d_in.get(), static_cast<int>(n), outs[0].get(), counts.get());
    cudaenv::sync("warm-up");
    for (auto& o : outs) o.poison();
    counts.poison();
    cudaenv::sync("poison");
    {
        cudaenv::Range region("bench_region");
        for (int t = 0; t < timed; ++t) compact_positive(d_in.get(), static_cast<int>(n), outs[t].get(), counts.get() + t);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    const std::vector<int> got = counts.download(timed);
    c.output("count", got);
    for (int t = 0; t < timed; ++t) write_outputs(c, cudaenv::Name("%d", t), got[t], outs[t], n, guard);
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
