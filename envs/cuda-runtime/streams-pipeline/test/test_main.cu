// Hidden harness for streams-pipeline.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "stream_pipeline.h"

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

// Values in [-8, 8).
static void fill_input(float* p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; ++i) {
        uint32_t h = mix((uint32_t)i * 0x9E3779B9U ^ seed ^ (uint32_t)(i >> 32));
        p[i] = (float)(h >> 8) * (16.0f / 16777216.0f) - 8.0f;
    }
}

// Device sinf differs from the host libm by a few ulp and the compiler may contract
// 0.75f*y + 0.25f*s into an FMA; over 16 contracting iterations (|dy'/dy| <= 1) the
// difference stays far below 1e-4 absolute + 1e-4 relative for |x| <= 8.
static bool close_enough(float got, float want)
{
    return std::isfinite(got) && std::fabs(got - want) <= 1e-4f + 1e-4f * std::fabs(want);
}

// Full check when n is small; otherwise every 7th element plus the first and last 65536.
static bool verify(const float* in, const float* out, size_t n, const char* label)
{
    const size_t edge = 65536;
    bool full = n <= (size_t)2000000;
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        bool sampled = full || i < edge || i + edge >= n || i % 7 == 3;
        if (!sampled) {
            if (std::isnan(out[i])) {  // output buffer was pre-filled with NaN
                if (bad++ < 5) fprintf(stderr, "[%s] out[%zu] was never written\n", label, i);
            }
            continue;
        }
        float want = pipeline_op(in[i]);
        if (!close_enough(out[i], want)) {
            if (bad++ < 5) fprintf(stderr, "[%s] out[%zu] = %.7g, expected %.7g (in = %.7g)\n",
                                   label, i, out[i], want, in[i]);
        }
    }
    if (bad) fprintf(stderr, "[%s] %zu mismatching elements (n = %zu)\n", label, bad, n);
    return bad == 0;
}

static bool run_case(size_t n, uint32_t seed)
{
    float *h_in = nullptr, *h_out = nullptr;
    CHECK(cudaMallocHost(&h_in, (n + 1) * sizeof(float)));
    CHECK(cudaMallocHost(&h_out, (n + 1) * sizeof(float)));
    fill_input(h_in, n + 1, seed);
    for (size_t i = 0; i < n; ++i) h_out[i] = NAN;
    const float sentinel = 12345.5f;
    h_out[n] = sentinel;

    pipeline_process(h_in, h_out, n);
    CHECK(cudaGetLastError());
    // The function must return with the results already in h_out: no extra sync here
    // before reading (a function that returns early leaves NaNs behind).
    char label[64];
    snprintf(label, sizeof label, "n=%zu", n);
    bool ok = verify(h_in, h_out, n, label);
    if (h_out[n] != sentinel) {
        fprintf(stderr, "[%s] element past the end was overwritten\n", label);
        ok = false;
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    return ok;
}

static bool run_perf()
{
    const size_t n = (size_t)1 << 25;  // 128 MiB per direction per call
    const int warmup = 3, timed = 4;
    float *h_in = nullptr, *h_out = nullptr;
    CHECK(cudaMallocHost(&h_in, (size_t)timed * n * sizeof(float)));
    CHECK(cudaMallocHost(&h_out, (size_t)timed * n * sizeof(float)));
    for (int r = 0; r < timed; ++r) fill_input(h_in + (size_t)r * n, n, (0xC0FFEEu + 77u * r) ^ (uint32_t)g_bench_mix);

    for (int w = 0; w < warmup; ++w) pipeline_process(h_in, h_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (size_t i = 0; i < (size_t)timed * n; ++i) h_out[i] = NAN;

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) pipeline_process(h_in + (size_t)r * n, h_out + (size_t)r * n, n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[64];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = verify(h_in + (size_t)r * n, h_out + (size_t)r * n, n, label) && ok;
    }
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
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
        const size_t sizes[] = {0, 1, 1000, 65537, ((size_t)3 << 20) + 17, 10000019};
        uint32_t seed = 1234;
        for (size_t n : sizes) ok = run_case(n, seed++) && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
