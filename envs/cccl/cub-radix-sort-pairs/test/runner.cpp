// cub-radix-sort-pairs' runner: calls rank_scores on the checker's cases and writes the
// sorted pairs and the inputs (as they are after the call) out. It decides nothing:
// check/check.py, in a sandbox of its own, draws the inputs and compares.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "rank_scores.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// The pairs of one call on the device: the inputs as the checker gave them (n elements and a
// sentinel past them), the outputs poisoned with a guard zone after the n elements.
struct Pairs {
    DeviceArray<float> scores, scores_out;
    DeviceArray<int> ids, ids_out;
    Pairs(const float* s, const int32_t* id, size_t padded, size_t outs)
        : scores(padded), scores_out(outs), ids(padded), ids_out(outs) {
        scores.upload(s, padded);
        ids.upload(id, padded);
        poison();
    }
    void poison() {
        scores_out.poison();
        ids_out.poison();
    }
    void call(int n) { rank_scores(scores.get(), ids.get(), scores_out.get(), ids_out.get(), n); }
    // The outputs (with their guard zones) and the inputs (with their sentinels).
    void write(Case& c, const char* suffix) {
        c.output(cudaenv::Name("scores_out%s", suffix), scores_out.download(scores_out.size()));
        c.output(cudaenv::Name("ids_out%s", suffix), ids_out.download(ids_out.size()));
        c.output(cudaenv::Name("scores_in%s", suffix), scores.download(scores.size()));
        c.output(cudaenv::Name("ids_in%s", suffix), ids.download(ids.size()));
    }
};

static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    const size_t guard = (size_t)c.scalar<int32_t>("guard");
    const std::vector<float> scores = c.input<float>("scores");
    const std::vector<int32_t> ids = c.input<int32_t>("ids");
    if (scores.size() != ids.size()) throw cudaenv::CaseError("scores and ids differ in length");
    Pairs d(scores.data(), ids.data(), scores.size(), (size_t)n + guard);
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    {
        cudaenv::Call call(n > 1);  // on a GPU the grader checks that kernels ran in here
        d.call(n);
        cudaenv::sync("rank_scores");
    }
    d.write(c, "");
}

// The benchmark: each timed call sorts its own input into its own (poisoned) outputs, all of
// which come back; three warm-up calls first, on the first inputs.
static void perf_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("scores");  // (timed, n + 1)
    if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1) throw cudaenv::CaseError("scores is not (timed, n + 1)");
    const int timed = (int)shape[0], n = (int)shape[1] - 1, warmup = c.scalar<int32_t>("warmup");
    const size_t guard = (size_t)c.scalar<int32_t>("guard"), padded = (size_t)n + 1;
    const std::vector<float> scores = c.input<float>("scores");
    const std::vector<int32_t> ids = c.input<int32_t>("ids");
    if (scores.size() != ids.size()) throw cudaenv::CaseError("scores and ids differ in length");
    std::vector<Pairs> d;
    d.reserve(timed);
    for (int r = 0; r < timed; ++r)
        d.emplace_back(scores.data() + r * padded, ids.data() + r * padded, padded, (size_t)n + guard);
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    for (int w = 0; w < warmup; ++w) d[w % timed].call(n);
    cudaenv::sync("warm-up");
    for (auto& p : d) p.poison();
    cudaenv::check(cudaDeviceSynchronize(), "poison");
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) d[r].call(n);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < timed; ++r) d[r].write(c, cudaenv::Name("%d", r));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
