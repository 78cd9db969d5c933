// cub-segmented-reduce's runner: calls segment_max on the checker's cases and writes the
// maxima out. It decides nothing: check/check.py, in a sandbox of its own, draws the segments
// and their values and compares every output bit for bit.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "segment_max.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One problem on the device: the values (poison outside every segment, as the checker laid
// them), the offsets, and the output with its guard zone, poisoned.
struct Segments {
    DeviceArray<float> vals, out;
    DeviceArray<int> offsets;
    int segs;
    bool has_values;  // some segment is not empty (a call on empty segments may launch nothing)
    Segments(const std::vector<float>& v, const std::vector<int32_t>& off, size_t guard)
        : vals(v), out(off.size() - 1 + guard), offsets(off), segs((int)off.size() - 1),
          has_values(off.back() > off.front()) {
        out.poison();
    }
    void call() { segment_max(vals.get(), offsets.get(), segs, out.get()); }
};

static std::vector<int32_t> offsets_of(Case& c, const char* name) {
    std::vector<int32_t> off = c.input<int32_t>(name);
    if (off.empty()) throw cudaenv::CaseError("%s is empty (num_segments + 1 offsets)", name);
    return off;
}

static void test_case(Case& c) {
    Segments d(c.input<float>("vals"), offsets_of(c, "offsets"), (size_t)c.scalar<int32_t>("guard"));
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    {
        cudaenv::Call call(d.has_values);  // on a GPU the grader checks that kernels ran in here
        d.call();
        cudaenv::sync("segment_max");
    }
    c.output("out", d.out.download(d.out.size()));
}

// The benchmark: each timed call reduces its own problem into its own (poisoned) output, all
// of which come back; warm-up calls first, their outputs poisoned again afterwards.
static void perf_case(Case& c) {
    const int timed = c.scalar<int32_t>("timed"), warmup = c.scalar<int32_t>("warmup");
    const size_t guard = (size_t)c.scalar<int32_t>("guard");
    std::vector<Segments> d;
    d.reserve(timed);
    for (int r = 0; r < timed; ++r)
        d.emplace_back(c.input<float>(cudaenv::Name("vals%d", r)), offsets_of(c, cudaenv::Name("offsets%d", r)), guard);
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    for (int w = 0; w < warmup; ++w) d[w % timed].call();
    cudaenv::sync("warm-up");
    for (auto& s : d) s.out.poison();
    cudaenv::check(cudaDeviceSynchronize(), "poison");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) d[r].call();
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < timed; ++r) c.output(cudaenv::Name("out%d", r), d[r].out.download(d[r].out.size()));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
