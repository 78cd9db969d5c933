// Hidden harness for box_blur5 (include/box_blur.h).
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "box_blur.h"

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

static uint64_t g_rng = 0x1f83d9abfb41bd6bull;
static uint64_t next_u64()
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float uniform01() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

static std::vector<float> make_image(int w, int h)
{
    std::vector<float> img(static_cast<size_t>(w) * h);
    for (auto& v : img) v = uniform01();
    return img;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Reference in double. Inputs are in [0, 1): a float sum of the 25 taps in any order is within
// 24 * 2^-24 * 25 < 3.6e-5 of the exact sum, i.e. < 1.5e-6 after dividing by 25, plus about one
// ulp (< 6e-8) for the division or a multiplication by 1/25. 5e-6 absolute covers that; a single
// wrong tap moves an output by up to 0.04.
static void check(const char* what, const std::vector<float>& in, const std::vector<float>& got, int w,
                  int h)
{
    int bad = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double s = 0.0;
            for (int dy = -2; dy <= 2; ++dy) {
                const size_t row = static_cast<size_t>(clampi(y + dy, 0, h - 1)) * w;
                for (int dx = -2; dx <= 2; ++dx) s += in[row + clampi(x + dx, 0, w - 1)];
            }
            const double want = s / 25.0;
            const float g = got[static_cast<size_t>(y) * w + x];
            if (!(std::fabs(static_cast<double>(g) - want) <= 5e-6)) {
                if (bad < 5)
                    fprintf(stderr, "FAIL %s (%d x %d): out(%d, %d) = %.9g, want %.9g\n", what, w, h, x,
                            y, g, want);
                ++bad;
            }
        }
    if (bad) {
        fprintf(stderr, "FAIL %s (%d x %d): %d wrong pixels\n", what, w, h, bad);
        ++g_failures;
    }
}

static void run_case(int w, int h)
{
    const size_t px = static_cast<size_t>(w) * h, bytes = px * sizeof(float);
    std::vector<float> img = make_image(w, h);
    float *d_in = nullptr, *d_out = nullptr;
    if (px) {
        CHECK_CUDA(cudaMalloc(&d_in, bytes));
        CHECK_CUDA(cudaMalloc(&d_out, bytes));
        CHECK_CUDA(cudaMemcpy(d_in, img.data(), bytes, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_out, 0xFF, bytes));  // NaN sentinel
    }
    box_blur5(d_in, d_out, w, h);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    if (px) {
        std::vector<float> got(px);
        CHECK_CUDA(cudaMemcpy(got.data(), d_out, bytes, cudaMemcpyDeviceToHost));
        check("blur", img, got, w, h);
        CHECK_CUDA(cudaFree(d_in));
        CHECK_CUDA(cudaFree(d_out));
    }
}

static void run_tests()
{
    const int shapes[][2] = {{0, 0},    {0, 7},     {7, 0},     {1, 1},      {1, 9},     {9, 1},
                             {2, 2},    {3, 5},     {5, 3},     {5, 5},      {16, 16},   {33, 17},
                             {17, 33},  {1000, 3},  {3, 1000},  {257, 255},  {1920, 1080},
                             {4097, 31}, {31, 4097}, {2048, 2048}};
    for (const auto& s : shapes) run_case(s[0], s[1]);
}

static void run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int w = 8192, h = 8192, timed = 5;
    const size_t px = static_cast<size_t>(w) * h, bytes = px * sizeof(float);
    std::vector<float> img = make_image(w, h);
    float* d_in;
    CHECK_CUDA(cudaMalloc(&d_in, bytes));
    CHECK_CUDA(cudaMemcpy(d_in, img.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<float*> outs(timed);
    for (auto& p : outs) {
        CHECK_CUDA(cudaMalloc(&p, bytes));
        CHECK_CUDA(cudaMemset(p, 0xFF, bytes));
    }
    for (int i = 0; i < 3; ++i) box_blur5(d_in, outs[0], w, h);  // warm-up
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemset(outs[0], 0xFF, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int t = 0; t < timed; ++t) box_blur5(d_in, outs[t], w, h);
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    // The first output is checked against the reference, the others bitwise against the first
    // (same input, so a deterministic kernel gives identical results).
    std::vector<float> first(px), got(px);
    CHECK_CUDA(cudaMemcpy(first.data(), outs[0], bytes, cudaMemcpyDeviceToHost));
    check("perf run", img, first, w, h);
    for (int t = 1; t < timed; ++t) {
        CHECK_CUDA(cudaMemcpy(got.data(), outs[t], bytes, cudaMemcpyDeviceToHost));
        if (memcmp(got.data(), first.data(), bytes) != 0) check("perf run (later call)", img, got, w, h);
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
    printf("all box_blur5 checks passed%s\n", perf ? " (perf run)" : "");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
