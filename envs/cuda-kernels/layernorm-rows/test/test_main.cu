// Hidden harness for layernorm-rows: row-wise layer normalisation with gamma/beta.
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "layernorm.h"

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
static const uint32_t kPoison = 0x7FC01A7Eu;  // NaN bit pattern written to y beforehand

static void poison(float* d, size_t count) {
    std::vector<uint32_t> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// Tolerance: |y - exact| <= 1e-3 * (1 + |exact|), exact computed in double from the float
// inputs. With |mean| <= 1000 and std >= 1, a float two-pass (or Welford) computation with
// tree reductions is off by ~1e-4 at most (x - mean alone carries ~3e-5). The one-pass
// formula E[x^2] - E[x]^2 in float loses the variance to cancellation on offset rows (errors
// of several percent), and an unbiased (1/(cols-1)) variance or a misplaced eps is caught by
// the short rows and by the eps = 0.1 case.
static bool check_rows(const char* name, const float* x, const float* g, const float* b,
                       const float* y, int rows, int cols, float eps) {
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + (size_t)r * cols;
        const float* yr = y + (size_t)r * cols;
        double s = 0.0;
        for (int j = 0; j < cols; ++j) s += xr[j];
        double mean = s / cols, q = 0.0;
        for (int j = 0; j < cols; ++j) { double d = xr[j] - mean; q += d * d; }
        double rstd = 1.0 / sqrt(q / cols + (double)eps);
        for (int j = 0; j < cols; ++j) {
            double ref = (xr[j] - mean) * rstd * g[j] + b[j];
            if (!(fabs((double)yr[j] - ref) <= 1e-3 * (1.0 + fabs(ref)))) {
                fprintf(stderr, "FAIL %s: y[%d][%d] = %.9g, expected %.9g (%dx%d)\n", name, r, j,
                        yr[j], ref, rows, cols);
                return false;
            }
        }
    }
    size_t n = (size_t)rows * cols;
    for (size_t i = n; i < n + kGuard; ++i) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        if (u != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past the end of y (index %zu)\n", name, i);
            return false;
        }
    }
    return true;
}

enum Kind { CENTERED, OFFSET, CONSTANT };

static std::vector<float> make_x(int rows, int cols, Kind kind, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> h((size_t)rows * cols);
    for (int r = 0; r < rows; ++r) {
        float* x = &h[(size_t)r * cols];
        float off = 0.f, scale = 1.f;
        if (kind == OFFSET) { off = rng.uni(-1000.f, 1000.f); scale = rng.uni(1.8f, 5.0f); }
        for (;;) {
            for (int j = 0; j < cols; ++j)
                x[j] = (kind == CONSTANT) ? 2.0f : off + scale * rng.uni(-1.7f, 1.7f);
            if (kind != OFFSET || cols < 2) break;
            // Offset rows promise a (population) standard deviation of at least 1; short rows
            // can fall below that by chance, so draw them again.
            double s = 0.0, q = 0.0;
            for (int j = 0; j < cols; ++j) s += x[j];
            for (int j = 0; j < cols; ++j) q += (x[j] - s / cols) * (x[j] - s / cols);
            if (q / cols >= 1.0) break;
        }
    }
    return h;
}

struct Params { std::vector<float> gamma, beta; };

static Params make_params(int cols, uint64_t seed) {
    Rng rng(seed);
    Params p{std::vector<float>(cols), std::vector<float>(cols)};
    for (int j = 0; j < cols; ++j) { p.gamma[j] = rng.uni(0.5f, 1.5f); p.beta[j] = rng.uni(-1.f, 1.f); }
    return p;
}

static bool run_case(const char* tag, int rows, int cols, Kind kind, float eps = 1e-5f) {
    char name[80];
    snprintf(name, sizeof name, "%s-%dx%d", tag, rows, cols);
    size_t n = (size_t)rows * cols;
    std::vector<float> h = make_x(rows, cols, kind, 77ULL * rows + cols + 100000ULL * kind);
    Params p = make_params(cols, 5ULL + cols);
    float *dx, *dg, *db, *dy;
    CK(cudaMalloc(&dx, (n + 1) * 4));
    CK(cudaMalloc(&dg, cols * 4)); CK(cudaMalloc(&db, cols * 4));
    CK(cudaMalloc(&dy, (n + kGuard) * 4));
    if (n) CK(cudaMemcpy(dx, h.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dg, p.gamma.data(), cols * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, p.beta.data(), cols * 4, cudaMemcpyHostToDevice));
    poison(dy, n + kGuard);
    layernorm_rows(dx, dg, db, dy, rows, cols, eps);
    sync_check(name);
    std::vector<float> got(n + kGuard);
    CK(cudaMemcpy(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost));
    bool ok = check_rows(name, h.data(), p.gamma.data(), p.beta.data(), got.data(), rows, cols, eps);
    CK(cudaFree(dx)); CK(cudaFree(dg)); CK(cudaFree(db)); CK(cudaFree(dy));
    if (ok) printf("ok   %s\n", name);
    return ok;
}

static int run_tests() {
    bool ok = true;
    ok &= run_case("empty", 0, 8, CENTERED);
    const int shapes[][2] = {{1, 1}, {1, 2}, {3, 7}, {8, 32}, {5, 33}, {100, 768}, {33, 1000},
                             {7, 4097}, {3000, 100}, {2, 65536}, {1, 262144}, {50001, 3}};
    for (auto& s : shapes) ok &= run_case("centered", s[0], s[1], CENTERED);
    for (auto& s : shapes) ok &= run_case("offset", s[0], s[1], OFFSET);
    ok &= run_case("constant", 4, 999, CONSTANT);
    ok &= run_case("eps-0.1", 16, 300, CENTERED, 0.1f);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int rows = 8192, cols = 4096;
    const int R = 6;  // call r reads rows r .. r+rows-1 of the input and has its own output
    const size_t n = (size_t)rows * cols, stride = n + kGuard;
    std::vector<float> h = make_x(rows + R, cols, OFFSET, 4242 ^ g_bench_mix);
    Params p = make_params(cols, 17 ^ g_bench_mix);
    float *dx, *dg, *db, *dy, *dwarm;
    CK(cudaMalloc(&dx, h.size() * 4));
    CK(cudaMalloc(&dg, cols * 4)); CK(cudaMalloc(&db, cols * 4));
    CK(cudaMalloc(&dwarm, n * 4));
    CK(cudaMalloc(&dy, stride * R * 4));
    CK(cudaMemcpy(dx, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dg, p.gamma.data(), cols * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, p.beta.data(), cols * 4, cudaMemcpyHostToDevice));
    poison(dy, stride * R);
    const float eps = 1e-5f;
    for (int w = 0; w < 3; ++w) layernorm_rows(dx, dg, db, dwarm, rows, cols, eps);
    sync_check("warm-up");
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r)
        layernorm_rows(dx + (size_t)r * cols, dg, db, dy + stride * r, rows, cols, eps);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<float> got(stride);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(got.data(), dy + stride * r, stride * 4, cudaMemcpyDeviceToHost));
        ok = check_rows("perf", h.data() + (size_t)r * cols, p.gamma.data(), p.beta.data(),
                        got.data(), rows, cols, eps);
    }
    CK(cudaFree(dx)); CK(cudaFree(dg)); CK(cudaFree(db)); CK(cudaFree(dy)); CK(cudaFree(dwarm));
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
