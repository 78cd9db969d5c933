// Hidden harness for bitonic_sort (include/bitonic_sort.h).
#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "bitonic_sort.h"

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

static uint64_t g_rng = 0x3c6ef372fe94f82bull;
static uint64_t next_u64()
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

enum Pattern { kRandom, kFewValues, kSorted, kReversed, kAllEqual, kExtremes, kNumPatterns };
static const char* kPatternName[] = {"random", "few-distinct", "sorted", "reversed", "all-equal",
                                     "extremes"};

static std::vector<int> make_data(int n, int pattern)
{
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) {
        switch (pattern) {
            case kRandom: v[i] = static_cast<int>(static_cast<uint32_t>(next_u64())); break;
            case kFewValues: v[i] = static_cast<int>(next_u64() % 5) - 2; break;
            case kSorted: v[i] = i * 3 - n; break;
            case kReversed: v[i] = n - 7 * i; break;
            case kAllEqual: v[i] = 42; break;
            default: {
                const int pick = static_cast<int>(next_u64() % 4);
                v[i] = pick == 0 ? INT_MIN : pick == 1 ? INT_MAX : pick == 2 ? -1 : 0;
            }
        }
    }
    return v;
}

// Integers: the result must equal std::sort's exactly.
static void check_sorted(const char* what, int n, const std::vector<int>& input,
                         const std::vector<int>& got)
{
    std::vector<int> want = input;
    std::sort(want.begin(), want.end());
    for (int i = 0; i < n; ++i) {
        if (got[i] != want[i]) {
            fprintf(stderr, "FAIL %s (n=%d): data[%d] = %d, want %d\n", what, n, i, got[i], want[i]);
            ++g_failures;
            return;
        }
    }
}

static void run_case(int n, int pattern)
{
    std::vector<int> h = make_data(n, pattern);
    int* d = nullptr;
    const size_t bytes = static_cast<size_t>(n) * sizeof(int);
    if (n) {
        CHECK_CUDA(cudaMalloc(&d, bytes));
        CHECK_CUDA(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
    }
    bitonic_sort(d, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    if (n) {
        std::vector<int> got(n);
        CHECK_CUDA(cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost));
        check_sorted(kPatternName[pattern], n, h, got);
        CHECK_CUDA(cudaFree(d));
    }
}

static void run_tests()
{
    run_case(0, kRandom);
    for (int lg = 0; lg <= 14; ++lg)
        for (int p = 0; p < kNumPatterns; ++p) run_case(1 << lg, p);
    const int big[] = {15, 16, 17, 20, 22};
    for (int lg : big)
        for (int p = 0; p < kNumPatterns; ++p) run_case(1 << lg, p);
}

static void run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int n = 1 << 24, timed = 5;
    const size_t bytes = static_cast<size_t>(n) * sizeof(int);
    std::vector<int> h = make_data(n, kRandom);
    int* d_src;
    CHECK_CUDA(cudaMalloc(&d_src, bytes));
    CHECK_CUDA(cudaMemcpy(d_src, h.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<int*> bufs(timed);
    for (auto& b : bufs) CHECK_CUDA(cudaMalloc(&b, bytes));

    for (int w = 0; w < 3; ++w) {  // warm-up, each on an unsorted copy
        CHECK_CUDA(cudaMemcpy(bufs[0], d_src, bytes, cudaMemcpyDeviceToDevice));
        bitonic_sort(bufs[0], n);
    }
    CHECK_CUDA(cudaGetLastError());
    for (auto& b : bufs) CHECK_CUDA(cudaMemcpy(b, d_src, bytes, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int t = 0; t < timed; ++t) bitonic_sort(bufs[t], n);  // each sorts fresh unsorted data
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    std::vector<int> want = h, got(n);
    std::sort(want.begin(), want.end());
    for (int t = 0; t < timed; ++t) {
        CHECK_CUDA(cudaMemcpy(got.data(), bufs[t], bytes, cudaMemcpyDeviceToHost));
        if (got != want) {
            fprintf(stderr, "FAIL perf run %d: output is not the sorted input\n", t);
            ++g_failures;
        }
        CHECK_CUDA(cudaFree(bufs[t]));
    }
    CHECK_CUDA(cudaFree(d_src));
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
    printf("all bitonic_sort checks passed%s\n", perf ? " (perf run)" : "");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
