// Hidden harness for thrust-transform-reduce.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "moments.h"

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

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "CUDA error: %s -> %s (%s:%d)\n", #call,                 \
                    cudaGetErrorString(err_), __FILE__, __LINE__);                   \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

// offset + spread * (u1 + u2 + u3 - 1.5): a bell-shaped distribution around `offset`.
static std::vector<float> make_input(int n, float offset, float spread, uint32_t seed)
{
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) {
        float u = 0.f;
        for (uint32_t k = 0; k < 3; ++k)
            u += (float)(mix((uint32_t)i * 2654435761u ^ (seed + 0x1000193u * k)) >> 8) / 16777216.0f;
        v[i] = offset + spread * (u - 1.5f);
    }
    return v;
}

// Two-pass evaluation in long double (64-bit mantissa on x86-64).
static void cpu_moments(const std::vector<float>& v, double* mean, double* var)
{
    if (v.empty()) { *mean = 0; *var = 0; return; }
    long double s = 0;
    for (float f : v) s += f;
    long double m = s / v.size();
    long double q = 0;
    for (float f : v) { long double d = f - m; q += d * d; }
    *mean = (double)m;
    *var = (double)(q / v.size());
}

// Double accumulation over up to 2^26 terms in any order (serial chunks or trees) stays
// within ~1e-11 relative of the exact value, so 1e-8 relative is safe for any sound
// double-precision method and rejects float accumulation (errors ~1e-5 and worse).
static bool close_rel(double got, double want)
{
    return std::isfinite(got) && std::fabs(got - want) <= 1e-8 * std::fabs(want) + 1e-12;
}

static bool check(double mean, double var, const std::vector<float>& v, const char* label)
{
    double wm, wv;
    cpu_moments(v, &wm, &wv);
    bool ok = true;
    if (!close_rel(mean, wm)) { fprintf(stderr, "[%s] mean = %.17g, expected %.17g\n", label, mean, wm); ok = false; }
    if (!close_rel(var, wv)) { fprintf(stderr, "[%s] variance = %.17g, expected %.17g\n", label, var, wv); ok = false; }
    return ok;
}

static bool run_case(int n, float offset, float spread, uint32_t seed)
{
    char label[96];
    snprintf(label, sizeof label, "n=%d offset=%g spread=%g", n, offset, spread);
    std::vector<float> v = make_input(n, offset, spread, seed);
    float* d_x = nullptr;
    CHECK(cudaMalloc(&d_x, (n + 1) * sizeof(float)));
    if (n) CHECK(cudaMemcpy(d_x, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const float poison = 1.0e30f;  // element past the end: reading it ruins both results
    CHECK(cudaMemcpy(d_x + n, &poison, sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());  // uploads complete even if the solution uses its own stream
    double mean = -1.0, var = -1.0;
    mean_and_variance(d_x, n, &mean, &var);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    bool ok = check(mean, var, v, label);
    CHECK(cudaFree(d_x));
    return ok;
}

static bool run_perf()
{
    const int n = 1 << 26, warmup = 3, timed = 5;
    std::vector<std::vector<float>> in(timed);
    std::vector<float*> d_x(timed);
    for (int r = 0; r < timed; ++r) {
        in[r] = make_input(n, 10.0f + 3.0f * r, 2.0f + r, (777u + r) ^ (uint32_t)g_bench_mix);
        CHECK(cudaMalloc(&d_x[r], n * sizeof(float)));
        CHECK(cudaMemcpy(d_x[r], in[r].data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
    CHECK(cudaDeviceSynchronize());
    double m, v;
    for (int w = 0; w < warmup; ++w) mean_and_variance(d_x[w % timed], n, &m, &v);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    std::vector<double> mean(timed, -1.0), var(timed, -1.0);

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) mean_and_variance(d_x[r], n, &mean[r], &var[r]);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = check(mean[r], var[r], in[r], label) && ok;
        CHECK(cudaFree(d_x[r]));
    }
    return ok;
}

int main(int argc, char** argv)
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();

    bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    CHECK(cudaSetDevice(0));
    bool ok = true;
    if (perf) {
        ok = run_perf();
    } else {
        ok = run_case(0, 0.f, 1.f, 1) && ok;
        ok = run_case(1, 3.f, 1.f, 2) && ok;
        ok = run_case(2, -1.f, 4.f, 3) && ok;
        ok = run_case(1000, 0.f, 1.f, 4) && ok;
        ok = run_case(65537, -7.5f, 0.25f, 5) && ok;
        ok = run_case(1000003, 1000.f, 1.f, 6) && ok;     // large mean, small spread
        ok = run_case(1 << 24, 0.5f, 100.f, 7) && ok;
        ok = run_case((1 << 25) + 11, -250.f, 3.f, 8) && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
