// Hidden harness for compact_positive (include/compact.h).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "compact.h"

static char g_token[160];

// CUDAENV_BENCH_SEED: the grader's fresh seed for each benchmark round (a decimal integer).
// main reads it once, before any solution code runs, and unsets it; run_perf XORs the result
// into every seed of its inputs, so each round draws new values of the same sizes and
// distribution. Absent or malformed: 0, so a --perf run by hand keeps the fixed inputs.
static uint64_t bench_seed()
{
    const char* text = getenv("CUDAENV_BENCH_SEED");
    uint64_t h = 0;
    if (text != nullptr && *text >= '0' && *text <= '9') {
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = strtoull(text, &end, 10);
        if (errno == 0 && *end == '\0') {  // splitmix64 of the seed: every bit depends on it
            h = (uint64_t)v + 0x9E3779B97F4A7C15ull;
            h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
            h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
            h ^= h >> 31;
        }
    }
    unsetenv("CUDAENV_BENCH_SEED");
    return h;
}
static uint64_t g_bench_mix = 0;  // bench_seed(), set once in main
static int g_failures = 0;

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t g_rng = 0x5be0cd19137e2179ull;
static uint64_t next_u64()
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f));
}

enum Pattern { kHalf, kSparse, kAllPositive, kNonePositive, kZerosAndTiny, kAlternating, kNumPatterns };
static const char* kPatternName[] = {"half positive", "1% positive", "all positive", "none positive",
                                     "signed zeros and subnormals", "alternating"};

static std::vector<float> make_data(int n, int pattern)
{
    const float tiny = std::numeric_limits<float>::denorm_min();
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) {
        switch (pattern) {
            case kHalf: v[i] = uniform(-100.0f, 100.0f); break;
            case kSparse: v[i] = (next_u64() % 100 == 0) ? uniform(0.5f, 1.0f) : -uniform(0.0f, 1.0f); break;
            case kAllPositive: v[i] = uniform(1.0f, 2.0f) + static_cast<float>(i % 1000); break;
            case kNonePositive: v[i] = (i % 3 == 0) ? 0.0f : -uniform(0.0f, 5.0f); break;
            case kZerosAndTiny: {
                const int pick = static_cast<int>(next_u64() % 6);
                v[i] = pick == 0 ? 0.0f : pick == 1 ? -0.0f : pick == 2 ? tiny : pick == 3 ? -tiny
                     : pick == 4 ? 1e-40f : -uniform(0.0f, 1.0f);
                break;
            }
            default: v[i] = (i % 2 ? 1.0f : -1.0f) * static_cast<float>(i + 1);
        }
    }
    return v;
}

// Bitwise exact: the kept values are copies, and the count is an integer.
static void check(const char* what, const std::vector<float>& in, const std::vector<float>& got,
                  int got_count)
{
    const int n = static_cast<int>(in.size());
    std::vector<float> want;
    for (int i = 0; i < n; ++i)
        if (in[i] > 0.0f) want.push_back(in[i]);
    if (got_count != static_cast<int>(want.size())) {
        fprintf(stderr, "FAIL %s (n=%d): count = %d, want %zu\n", what, n, got_count, want.size());
        ++g_failures;
        return;
    }
    for (size_t j = 0; j < want.size(); ++j) {
        if (memcmp(&got[j], &want[j], sizeof(float)) != 0) {
            fprintf(stderr, "FAIL %s (n=%d): out[%zu] = %.9g, want %.9g\n", what, n, j, got[j], want[j]);
            ++g_failures;
            return;
        }
    }
}

static void run_case(int n, int pattern)
{
    std::vector<float> in = make_data(n, pattern);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    float *d_in = nullptr, *d_out = nullptr;
    int* d_count;
    CHECK_CUDA(cudaMalloc(&d_count, sizeof(int)));
    CHECK_CUDA(cudaMemset(d_count, 0xFF, sizeof(int)));  // -1
    if (n) {
        CHECK_CUDA(cudaMalloc(&d_in, bytes));
        CHECK_CUDA(cudaMalloc(&d_out, bytes));
        CHECK_CUDA(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_out, 0xFF, bytes));  // NaN sentinel
    }
    compact_positive(d_in, n, d_out, d_count);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    int got_count = -1;
    CHECK_CUDA(cudaMemcpy(&got_count, d_count, sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<float> got(n);
    if (n) CHECK_CUDA(cudaMemcpy(got.data(), d_out, bytes, cudaMemcpyDeviceToHost));
    check(kPatternName[pattern], in, got, got_count);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
    CHECK_CUDA(cudaFree(d_count));
}

static void run_tests()
{
    run_case(0, kHalf);
    const int sizes[] = {1, 2, 31, 32, 33, 255, 256, 257, 1000, 4095, 4096, 4097, 65537, (1 << 20) + 77};
    for (int n : sizes)
        for (int p = 0; p < kNumPatterns; ++p) run_case(n, p);
    run_case((1 << 24) + 1, kHalf);
    run_case((1 << 24) + 3, kZerosAndTiny);
    run_case(12345, kHalf);  // small again after large calls
    run_case(0, kAllPositive);
}

static void run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int n = 1 << 26, timed = 5;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<float> in = make_data(n, kHalf);
    float* d_in;
    int* d_counts;
    CHECK_CUDA(cudaMalloc(&d_in, bytes));
    CHECK_CUDA(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&d_counts, timed * sizeof(int)));
    std::vector<float*> outs(timed);
    for (auto& p : outs) CHECK_CUDA(cudaMalloc(&p, bytes));
    for (int w = 0; w < 3; ++w) compact_positive(d_in, n, outs[0], d_counts);  // warm-up
    CHECK_CUDA(cudaGetLastError());
    for (auto& p : outs) CHECK_CUDA(cudaMemset(p, 0xFF, bytes));
    CHECK_CUDA(cudaMemset(d_counts, 0xFF, timed * sizeof(int)));
    CHECK_CUDA(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int t = 0; t < timed; ++t) compact_positive(d_in, n, outs[t], d_counts + t);
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    std::vector<int> counts(timed);
    CHECK_CUDA(cudaMemcpy(counts.data(), d_counts, timed * sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<float> got(n);
    for (int t = 0; t < timed; ++t) {
        CHECK_CUDA(cudaMemcpy(got.data(), outs[t], bytes, cudaMemcpyDeviceToHost));
        check("perf run", in, got, counts[t]);
        CHECK_CUDA(cudaFree(outs[t]));
    }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_counts));
}

int main(int argc, char** argv)
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();

    const bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    if (perf) run_perf();
    else run_tests();
    if (g_failures) {
        fprintf(stderr, "%d check(s) FAILED\n", g_failures);
        return 1;
    }
    printf("all compact_positive checks passed%s\n", perf ? " (perf run)" : "");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
