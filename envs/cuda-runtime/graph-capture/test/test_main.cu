// Hidden harness for graph-capture.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "graph_relax.h"

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

static std::vector<float> make_input(int n, uint32_t seed)
{
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = (float)(mix((uint32_t)i * 0x9E3779B9U ^ seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
    return v;
}

static std::vector<float> cpu_relax(std::vector<float> x, int iters)
{
    int n = (int)x.size();
    std::vector<float> tmp(n);
    for (int it = 0; it < iters; ++it) {
        for (int i = 0; i < n; ++i) {
            int l = i > 0 ? i - 1 : 0;
            int r = i < n - 1 ? i + 1 : n - 1;
            tmp[i] = 0.25f * x[l] + 0.5f * x[i] + 0.25f * x[r];
        }
        for (int i = 0; i < n; ++i) x[i] = 0.99f * tmp[i] + 0.01f;
    }
    return x;
}

// Values stay in [-1, 1]; each iteration is an averaging (non-expanding) map, so the
// per-iteration rounding differences (FMA contraction on the GPU, ~1 ulp) do not grow:
// 1e-5 absolute is far below the change made by one iteration on this data.
static bool compare(const std::vector<float>& got, const std::vector<float>& want, const char* label)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!(std::fabs(got[i] - want[i]) <= 1e-5f)) {
            if (bad++ < 5) fprintf(stderr, "[%s] x[%zu] = %.8g, expected %.8g\n", label, i, got[i], want[i]);
        }
    }
    if (bad) fprintf(stderr, "[%s] %zu mismatches\n", label, bad);
    return bad == 0;
}

static bool stream_clean(cudaStream_t s, const char* label)
{
    cudaStreamCaptureStatus st;
    CHECK(cudaStreamIsCapturing(s, &st));
    if (st != cudaStreamCaptureStatusNone) {
        fprintf(stderr, "[%s] stream left in capture mode\n", label);
        return false;
    }
    return true;
}

static bool run_case(int n, int iters, uint32_t seed, cudaStream_t s)
{
    char label[64];
    snprintf(label, sizeof label, "n=%d iters=%d", n, iters);
    std::vector<float> x0 = make_input(n, seed);
    float *d_x = nullptr, *d_tmp = nullptr;
    CHECK(cudaMalloc(&d_x, (n + 1) * sizeof(float)));
    CHECK(cudaMalloc(&d_tmp, (n + 1) * sizeof(float)));
    const float sentinel = -777.25f;
    std::vector<float> init(x0);
    init.push_back(sentinel);
    CHECK(cudaMemcpy(d_x, init.data(), (n + 1) * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_tmp, 0, (n + 1) * sizeof(float)));
    // The solution works on a non-blocking stream, which does not wait for the legacy
    // default stream: finish the uploads and the memset first.
    CHECK(cudaDeviceSynchronize());

    relax_iterations(d_x, d_tmp, n, iters, s);
    CHECK(cudaGetLastError());
    bool ok = stream_clean(s, label);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaDeviceSynchronize());
    std::vector<float> got(n + 1);
    CHECK(cudaMemcpy(got.data(), d_x, (n + 1) * sizeof(float), cudaMemcpyDeviceToHost));
    float past = got[n];
    got.pop_back();
    ok = compare(got, cpu_relax(x0, iters), label) && ok;
    if (past != sentinel) { fprintf(stderr, "[%s] wrote past the end of x\n", label); ok = false; }
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_tmp));
    return ok;
}

static bool run_perf(cudaStream_t s)
{
    const int n = 1 << 15, iters = 1000, warmup = 3, timed = 5;
    float* d_tmp = nullptr;
    CHECK(cudaMalloc(&d_tmp, n * sizeof(float)));
    std::vector<float*> d_x(timed);
    std::vector<std::vector<float>> x0(timed);
    for (int r = 0; r < timed; ++r) {
        x0[r] = make_input(n, (900u + r) ^ (uint32_t)g_bench_mix);
        CHECK(cudaMalloc(&d_x[r], n * sizeof(float)));
        CHECK(cudaMemcpy(d_x[r], x0[r].data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
    float* d_w = nullptr;
    CHECK(cudaMalloc(&d_w, n * sizeof(float)));
    CHECK(cudaMemcpy(d_w, x0[0].data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());  // the solution's stream does not wait for these uploads
    for (int w = 0; w < warmup; ++w) relax_iterations(d_w, d_tmp, n, iters, s);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) relax_iterations(d_x[r], d_tmp, n, iters, s);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = stream_clean(s, "perf");
    for (int r = 0; r < timed; ++r) {
        std::vector<float> got(n);
        CHECK(cudaMemcpy(got.data(), d_x[r], n * sizeof(float), cudaMemcpyDeviceToHost));
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = compare(got, cpu_relax(x0[r], iters), label) && ok;
        CHECK(cudaFree(d_x[r]));
    }
    CHECK(cudaFree(d_tmp));
    CHECK(cudaFree(d_w));
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
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bool ok = true;
    if (perf) {
        ok = run_perf(s);
    } else {
        ok = run_case(1000, 0, 1, s) && ok;        // no iterations: unchanged
        ok = run_case(1, 7, 2, s) && ok;           // single element (both neighbours clamp)
        ok = run_case(2, 3, 3, s) && ok;
        ok = run_case(1000, 37, 4, s) && ok;
        ok = run_case(4099, 1, 5, s) && ok;
        ok = run_case(100003, 130, 6, s) && ok;    // not a multiple of any batch/block size
        ok = run_case(1 << 15, 251, 7, s) && ok;
        ok = run_case(1 << 20, 64, 8, s) && ok;
    }
    CHECK(cudaStreamDestroy(s));
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
