// Hidden harness for softmax-rows: numerically stable row-wise softmax.
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "softmax.h"

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

#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error: %s at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(e_));                                            \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static void sync_check(const char* what) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "FAIL %s: CUDA error %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

struct Rng {  // splitmix64
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    float uni(float lo, float hi) { return lo + (hi - lo) * (float)((next() >> 40) * (1.0 / 16777216.0)); }
};

static const int kGuard = 64;
static const uint32_t kPoison = 0x7FC0F00Du;  // NaN bit pattern written to out beforehand

static void poison(float* d, size_t count) {
    std::vector<uint32_t> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// Tolerance: |got - exact| <= 1e-4 * exact + 1e-10 per element. expf is accurate to a few
// ulp for the arguments that matter, and a float row sum over up to 2^18 terms built from
// per-thread partials combined as a tree stays within ~1e-5 relative (a single serial float
// accumulator drifts by ~2e-4 there and fails); 1e-10 absolute covers results that
// underflow (or flush) to zero. An implementation that does not subtract the row max
// overflows on the shifted rows and fails.
static bool check_rows(const char* name, const float* in, const float* got, int rows, int cols) {
    std::vector<double> e(cols);
    for (int r = 0; r < rows; ++r) {
        const float* x = in + (size_t)r * cols;
        const float* y = got + (size_t)r * cols;
        double m = -INFINITY;
        for (int j = 0; j < cols; ++j) m = fmax(m, (double)x[j]);
        double s = 0.0;
        for (int j = 0; j < cols; ++j) { e[j] = exp((double)x[j] - m); s += e[j]; }
        for (int j = 0; j < cols; ++j) {
            double ref = e[j] / s;
            if (!(fabs((double)y[j] - ref) <= 1e-4 * ref + 1e-10)) {
                fprintf(stderr, "FAIL %s: out[%d][%d] = %.9g, expected %.9g (%dx%d)\n", name, r, j,
                        y[j], ref, rows, cols);
                return false;
            }
        }
    }
    size_t n = (size_t)rows * cols;
    for (size_t i = n; i < n + kGuard; ++i) {
        uint32_t u;
        memcpy(&u, &got[i], 4);
        if (u != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past the end of out (index %zu)\n", name, i);
            return false;
        }
    }
    return true;
}

enum Kind { UNIFORM, SHIFTED, WIDE, MASKED, ONE_HOT, CONSTANT };

static std::vector<float> make_input(int rows, int cols, Kind kind, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> h((size_t)rows * cols);
    for (int r = 0; r < rows; ++r) {
        float* x = &h[(size_t)r * cols];
        float shift = (kind == SHIFTED) ? 400.f * (float)(r % 5) - 900.f : 0.f;
        for (int j = 0; j < cols; ++j) {
            switch (kind) {
                case UNIFORM: x[j] = rng.uni(-10.f, 10.f); break;
                case SHIFTED: x[j] = shift + rng.uni(-30.f, 30.f); break;
                case WIDE: x[j] = rng.uni(-100.f, 100.f); break;
                case MASKED: x[j] = (rng.next() % 10 < 3) ? -INFINITY : rng.uni(-5.f, 5.f); break;
                case ONE_HOT: x[j] = -INFINITY; break;
                case CONSTANT: x[j] = 3.5f; break;
            }
        }
        if (kind == MASKED || kind == ONE_HOT) x[rng.next() % cols] = rng.uni(-5.f, 5.f);
    }
    return h;
}

static bool run_case(const char* tag, int rows, int cols, Kind kind) {
    char name[80];
    snprintf(name, sizeof name, "%s-%dx%d", tag, rows, cols);
    size_t n = (size_t)rows * cols;
    std::vector<float> h = make_input(rows, cols, kind, 31ULL * rows + cols + 1000ULL * kind);
    float *din, *dout;
    CK(cudaMalloc(&din, (n + 1) * 4));
    CK(cudaMalloc(&dout, (n + kGuard) * 4));
    if (n) CK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    poison(dout, n + kGuard);
    softmax_rows(din, dout, rows, cols);
    sync_check(name);
    std::vector<float> got(n + kGuard);
    CK(cudaMemcpy(got.data(), dout, got.size() * 4, cudaMemcpyDeviceToHost));
    bool ok = check_rows(name, h.data(), got.data(), rows, cols);
    CK(cudaFree(din)); CK(cudaFree(dout));
    if (ok) printf("ok   %s\n", name);
    return ok;
}

static int run_tests() {
    bool ok = true;
    ok &= run_case("empty", 0, 5, UNIFORM);
    const int shapes[][2] = {{1, 1}, {1, 7}, {3, 5}, {2, 32}, {5, 33}, {64, 1000}, {1000, 64},
                             {17, 4099}, {300, 2048}, {4, 100003}, {2, 262144}, {4096, 1},
                             {70001, 3}};
    for (auto& s : shapes) ok &= run_case("uniform", s[0], s[1], UNIFORM);
    ok &= run_case("shifted", 40, 1537, SHIFTED);
    ok &= run_case("shifted", 5, 77777, SHIFTED);
    ok &= run_case("wide", 50, 3001, WIDE);
    ok &= run_case("masked", 123, 777, MASKED);
    ok &= run_case("masked", 3, 5, MASKED);
    ok &= run_case("one-hot", 33, 2500, ONE_HOT);
    ok &= run_case("constant", 9, 10007, CONSTANT);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int rows = 4096, cols = 8192;
    const int R = 6;  // call r reads rows r .. r+rows-1 of the input and has its own output
    const size_t n = (size_t)rows * cols, stride = n + kGuard;
    std::vector<float> h = make_input(rows + R, cols, SHIFTED, 2026 ^ g_bench_mix);
    float *din, *dout, *dwarm;
    CK(cudaMalloc(&din, h.size() * 4));
    CK(cudaMalloc(&dwarm, n * 4));
    CK(cudaMalloc(&dout, stride * R * 4));
    CK(cudaMemcpy(din, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    poison(dout, stride * R);
    for (int w = 0; w < 3; ++w) softmax_rows(din, dwarm, rows, cols);
    sync_check("warm-up");
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) softmax_rows(din + (size_t)r * cols, dout + stride * r, rows, cols);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<float> got(stride);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(got.data(), dout + stride * r, stride * 4, cudaMemcpyDeviceToHost));
        ok = check_rows("perf", h.data() + (size_t)r * cols, got.data(), rows, cols);
    }
    CK(cudaFree(din)); CK(cudaFree(dout)); CK(cudaFree(dwarm));
    if (ok) printf("ok   perf (%d timed calls, %dx%d)\n", R, rows, cols);
    return ok ? 0 : 1;
}

int main(int argc, char** argv) {
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();
    bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    int rc = perf ? run_perf() : run_tests();
    if (rc != 0) { fprintf(stderr, "FAILED\n"); return 1; }
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
