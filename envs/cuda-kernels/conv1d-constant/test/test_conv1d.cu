// Hidden harness for conv1d_set_filter / conv1d_apply (include/conv1d.h).
#include <cfloat>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "conv1d.h"

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

static uint64_t g_rng = 0xbb67ae8584caa73bull;
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
static float small_int() { return static_cast<float>(static_cast<int>(next_u64() % 9) - 4); }

// Reference in double. Tolerance per output: the float sum of m = 2r+1 products, in any order
// and with or without FMA, is within m * FLT_EPSILON * S of the exact value, where
// S = sum |w_k * in_{i+k}| (standard error bound for recursive summation); we allow twice that
// plus 1e-6 absolute. With integer-valued data every partial sum is an exact small integer,
// so those cases are compared exactly.
static void check(const char* what, const std::vector<float>& x, const std::vector<float>& w, int r,
                  const std::vector<float>& got, bool exact)
{
    const int n = static_cast<int>(x.size());
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        double sum = 0.0, mag = 0.0;
        for (int k = -r; k <= r; ++k) {
            const int j = i + k;
            if (j < 0 || j >= n) continue;
            const double p = static_cast<double>(w[k + r]) * x[j];
            sum += p;
            mag += std::fabs(p);
        }
        const double tol = exact ? 0.0 : 1e-6 + 2.0 * (2 * r + 1) * FLT_EPSILON * mag;
        if (!(std::fabs(static_cast<double>(got[i]) - sum) <= tol)) {
            if (bad < 5)
                fprintf(stderr, "FAIL %s (n=%d r=%d): out[%d] = %.9g, want %.9g (tol %.3g)\n", what,
                        n, r, i, got[i], sum, tol);
            ++bad;
        }
    }
    if (bad) {
        fprintf(stderr, "FAIL %s (n=%d r=%d): %d wrong outputs\n", what, n, r, bad);
        ++g_failures;
    }
}

static std::vector<float> make_filter(int r, bool ints)
{
    std::vector<float> w(2 * r + 1);
    for (auto& v : w) v = ints ? small_int() : uniform(-1.0f, 1.0f);
    return w;
}

static void set_filter(const std::vector<float>& w, int r)
{
    conv1d_set_filter(w.data(), r);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
}

static void run_case(int n, int r, bool ints)
{
    std::vector<float> w = make_filter(r, ints);
    set_filter(w, r);
    std::vector<float> x(n);
    for (auto& v : x) v = ints ? small_int() : uniform(-1.0f, 1.0f);
    float *d_in = nullptr, *d_out = nullptr;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    if (n) {
        CHECK_CUDA(cudaMalloc(&d_in, bytes));
        CHECK_CUDA(cudaMalloc(&d_out, bytes));
        CHECK_CUDA(cudaMemcpy(d_in, x.data(), bytes, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_out, 0xFF, bytes));  // NaN sentinel
    }
    conv1d_apply(d_in, d_out, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    if (n) {
        std::vector<float> got(n);
        CHECK_CUDA(cudaMemcpy(got.data(), d_out, bytes, cudaMemcpyDeviceToHost));
        check(ints ? "integer data" : "random data", x, w, r, got, ints);
        CHECK_CUDA(cudaFree(d_in));
        CHECK_CUDA(cudaFree(d_out));
    }
}

static void run_tests()
{
    const int radii[] = {0, 1, 2, 5, 16, 31, 32};
    const int sizes[] = {0, 1, 2, 7, 31, 64, 65, 1000, 4097, 100003};
    for (int r : radii)
        for (int n : sizes) run_case(n, r, (n + r) % 3 == 0);
    run_case((1 << 22) + 13, 32, false);
    run_case((1 << 22) + 5, 7, true);
    run_case(3000000, 16, false);

    // The filter must really be replaced: two filters of the same radius on the same input.
    const int n = 5000, r = 4;
    std::vector<float> x(n);
    for (auto& v : x) v = small_int();
    float *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_in, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int rep = 0; rep < 3; ++rep) {
        std::vector<float> w = make_filter(r, true);
        set_filter(w, r);
        conv1d_apply(d_in, d_out, n);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
        std::vector<float> got(n);
        CHECK_CUDA(cudaMemcpy(got.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
        check("filter replaced", x, w, r, got, true);
    }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
}

static void run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int n = 1 << 25, r = 16, timed = 5;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<float> w = make_filter(r, false);
    set_filter(w, r);
    std::vector<float> x(n);
    for (auto& v : x) v = uniform(-1.0f, 1.0f);
    float* d_in;
    CHECK_CUDA(cudaMalloc(&d_in, bytes));
    CHECK_CUDA(cudaMemcpy(d_in, x.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<float*> outs(timed);
    for (auto& p : outs) {
        CHECK_CUDA(cudaMalloc(&p, bytes));
        CHECK_CUDA(cudaMemset(p, 0xFF, bytes));
    }
    for (int i = 0; i < 3; ++i) conv1d_apply(d_in, outs[0], n);  // warm-up
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemset(outs[0], 0xFF, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int t = 0; t < timed; ++t) conv1d_apply(d_in, outs[t], n);
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    // The first output is checked against the reference, the others bitwise against the first
    // (same input and filter, so a deterministic kernel gives identical results); any that
    // differ get the full check.
    std::vector<float> first(n), got(n);
    CHECK_CUDA(cudaMemcpy(first.data(), outs[0], bytes, cudaMemcpyDeviceToHost));
    check("perf run", x, w, r, first, false);
    for (int t = 1; t < timed; ++t) {
        CHECK_CUDA(cudaMemcpy(got.data(), outs[t], bytes, cudaMemcpyDeviceToHost));
        if (memcmp(got.data(), first.data(), bytes) != 0) check("perf run (later call)", x, w, r, got, false);
    }
    for (auto p : outs) CHECK_CUDA(cudaFree(p));
    CHECK_CUDA(cudaFree(d_in));
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
    printf("all conv1d checks passed%s\n", perf ? " (perf run)" : "");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
