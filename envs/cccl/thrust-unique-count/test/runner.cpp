// thrust-unique-count's runner: calls count_distinct on the checker's cases and writes the
// counts and the values (as the call left them) out. It decides nothing: check/check.py, in a
// sandbox of its own, draws the values and compares.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "distinct_count.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call on the first n values; the array holds a sentinel after them (a value that never
// occurs among them: reading it changes the count).
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    DeviceArray<int> values(c.input<int32_t>("values"));
    cudaenv::check(cudaDeviceSynchronize(), "upload");  // done even if the solution uses its own stream
    int count = -1;
    {
        cudaenv::Call call(n > 1);  // on a GPU the grader checks that kernels ran in here
        count = count_distinct(values.get(), n);
    }
    cudaenv::sync("count_distinct");
    c.output_scalar("count", (int32_t)count);
    c.output("values", values.download(values.size()));
}

// The benchmark: three warm-up calls, then each timed call on its own values; every count and
// every array (to show it unmodified) comes back.
static void perf_case(Case& c) {
    const std::vector<int64_t> shape = c.shape("values");  // (timed, n + 1)
    if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1) throw cudaenv::CaseError("values is not (timed, n + 1)");
    const int timed = (int)shape[0], n = (int)shape[1] - 1, warmup = c.scalar<int32_t>("warmup");
    const size_t padded = (size_t)n + 1;
    const std::vector<int32_t> values = c.input<int32_t>("values");
    std::vector<DeviceArray<int>> d;
    for (int r = 0; r < timed; ++r) {
        d.emplace_back(padded);
        d.back().upload(values.data() + r * padded, padded);
    }
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    for (int w = 0; w < warmup; ++w) (void)count_distinct(d[w % timed].get(), n);
    cudaenv::sync("warm-up");
    std::vector<int32_t> counts(timed, -1);
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) counts[r] = count_distinct(d[r].get(), n);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    c.output("count", counts);
    for (int r = 0; r < timed; ++r) c.output(cudaenv::Name("values%d", r), d[r].download(padded));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
