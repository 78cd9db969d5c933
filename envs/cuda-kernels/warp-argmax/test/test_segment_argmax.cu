// Hidden harness for segment_argmax (include/segment_argmax.h).
#include <cfloat>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "segment_argmax.h"

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

static uint64_t g_rng = 0x510e527fade682d1ull;
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

enum Pattern { kRandom, kTies, kAllEqual, kSignedZeros, kAscending, kDescending, kExtremes, kNumPatterns };
static const char* kPatternName[] = {"random", "many-ties", "all-equal", "signed-zeros",
                                     "ascending", "descending", "extremes"};

static std::vector<float> make_data(int n, int pattern)
{
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) {
        switch (pattern) {
            case kRandom: v[i] = uniform(-1000.0f, 1000.0f); break;
            case kTies: v[i] = static_cast<float>(static_cast<int>(next_u64() % 4)); break;
            case kAllEqual: v[i] = -2.5f; break;
            case kSignedZeros: {
                const int pick = static_cast<int>(next_u64() % 3);
                v[i] = pick == 0 ? 0.0f : pick == 1 ? -0.0f : -uniform(1.0f, 2.0f);
                break;
            }
            case kAscending: v[i] = static_cast<float>(i % 1000); break;
            case kDescending: v[i] = -static_cast<float>(i); break;
            default: {
                const int pick = static_cast<int>(next_u64() % 4);
                v[i] = pick == 0 ? -FLT_MAX : pick == 1 ? FLT_MAX : pick == 2 ? -FLT_MIN : -1e30f;
            }
        }
    }
    return v;
}

// Exact check: the index must be the first maximum, the value a bitwise copy of x at it.
static void check(const char* what, const std::vector<float>& x, const std::vector<float>& got_max,
                  const std::vector<int>& got_arg)
{
    const int n = static_cast<int>(x.size());
    const int segs = (n + 31) / 32;
    int bad = 0;
    for (int s = 0; s < segs; ++s) {
        const int lo = s * 32, hi = lo + 32 < n ? lo + 32 : n;
        int best = lo;
        for (int i = lo + 1; i < hi; ++i)
            if (x[i] > x[best]) best = i;
        const bool ok = got_arg[s] == best && memcmp(&got_max[s], &x[best], sizeof(float)) == 0;
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "FAIL %s (n=%d): segment %d got (max %.9g, arg %d), want (max %.9g, arg %d)\n",
                        what, n, s, got_max[s], got_arg[s], x[best], best);
            ++bad;
        }
    }
    if (bad) {
        fprintf(stderr, "FAIL %s (n=%d): %d wrong segments\n", what, n, bad);
        ++g_failures;
    }
}

static void run_case(int n, int pattern)
{
    std::vector<float> x = make_data(n, pattern);
    const int segs = (n + 31) / 32;
    float *d_x = nullptr, *d_max = nullptr;
    int* d_arg = nullptr;
    if (n) {
        CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&d_max, segs * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&d_arg, segs * sizeof(int)));
        CHECK_CUDA(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_max, 0xFF, segs * sizeof(float)));
        CHECK_CUDA(cudaMemset(d_arg, 0xFF, segs * sizeof(int)));
    }
    segment_argmax(d_x, n, d_max, d_arg);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    if (n) {
        std::vector<float> got_max(segs);
        std::vector<int> got_arg(segs);
        CHECK_CUDA(cudaMemcpy(got_max.data(), d_max, segs * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(got_arg.data(), d_arg, segs * sizeof(int), cudaMemcpyDeviceToHost));
        check(kPatternName[pattern], x, got_max, got_arg);
        CHECK_CUDA(cudaFree(d_x));
        CHECK_CUDA(cudaFree(d_max));
        CHECK_CUDA(cudaFree(d_arg));
    }
}

static void run_tests()
{
    const int sizes[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4113, 65536, (1 << 20) + 5};
    for (int n : sizes)
        for (int p = 0; p < kNumPatterns; ++p) run_case(n, p);
    run_case((1 << 24) + 3, kRandom);
    run_case((1 << 24) + 29, kTies);
}

static void run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int n = 1 << 27, segs = n / 32, timed = 5;
    std::vector<float> x = make_data(n, kRandom);
    float* d_x;
    CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<float*> maxs(timed);
    std::vector<int*> args(timed);
    for (int t = 0; t < timed; ++t) {
        CHECK_CUDA(cudaMalloc(&maxs[t], segs * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&args[t], segs * sizeof(int)));
        CHECK_CUDA(cudaMemset(maxs[t], 0xFF, segs * sizeof(float)));
        CHECK_CUDA(cudaMemset(args[t], 0xFF, segs * sizeof(int)));
    }
    for (int w = 0; w < 3; ++w) segment_argmax(d_x, n, maxs[0], args[0]);  // warm-up
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemset(maxs[0], 0xFF, segs * sizeof(float)));
    CHECK_CUDA(cudaMemset(args[0], 0xFF, segs * sizeof(int)));
    CHECK_CUDA(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int t = 0; t < timed; ++t) segment_argmax(d_x, n, maxs[t], args[t]);
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    std::vector<float> got_max(segs);
    std::vector<int> got_arg(segs);
    for (int t = 0; t < timed; ++t) {
        CHECK_CUDA(cudaMemcpy(got_max.data(), maxs[t], segs * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(got_arg.data(), args[t], segs * sizeof(int), cudaMemcpyDeviceToHost));
        check("perf run", x, got_max, got_arg);
        CHECK_CUDA(cudaFree(maxs[t]));
        CHECK_CUDA(cudaFree(args[t]));
    }
    CHECK_CUDA(cudaFree(d_x));
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
    printf("all segment_argmax checks passed%s\n", perf ? " (perf run)" : "");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
