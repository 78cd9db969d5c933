// Hidden harness for fused-axpby: z = alpha * x + beta * y.
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "axpby.h"

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

static const int kGuard = 64;  // poisoned floats after the output, must stay untouched
static const uint32_t kPoison = 0x7FC0DEADu;  // a NaN with a recognisable payload

static bool is_poison(float v) { uint32_t u; memcpy(&u, &v, 4); return u == kPoison; }

// Tolerance: the exact value is alpha*x + beta*y. A float implementation rounds at most
// three times (two products and a sum, or a product and an FMA), so its error is below
// 1.5 * FLT_EPSILON * (|alpha*x| + |beta*y|). We allow 4 * FLT_EPSILON * (...) + 1e-30.
static bool check(const char* name, const std::vector<float>& x, const std::vector<float>& y,
                  size_t xo, size_t yo, float alpha, float beta, const std::vector<float>& z, int n) {
    for (int i = 0; i < n; ++i) {
        double ax = (double)alpha * x[xo + i], by = (double)beta * y[yo + i];
        double ref = ax + by;
        double tol = 4.0 * 1.1920929e-7 * (fabs(ax) + fabs(by)) + 1e-30;
        if (!(fabs((double)z[i] - ref) <= tol)) {
            fprintf(stderr, "FAIL %s: z[%d] = %.9g, expected %.9g (n=%d)\n", name, i, z[i], ref, n);
            return false;
        }
    }
    for (int i = n; i < n + kGuard; ++i)
        if (!is_poison(z[i])) {
            fprintf(stderr, "FAIL %s: wrote past the end of z (index %d, n=%d)\n", name, i, n);
            return false;
        }
    return true;
}

static void fill_poison(float* d, size_t count) {
    std::vector<float> h(count);
    float p; memcpy(&p, &kPoison, 4);
    for (auto& v : h) v = p;
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// One correctness case: x, y at element offsets xo, yo, z at offset zo inside padded buffers.
static bool run_case(const char* name, int n, float alpha, float beta, int xo, int yo, int zo, Rng& rng) {
    size_t cap = (size_t)n + kGuard + 8;
    std::vector<float> x(cap), y(cap), z(cap);
    for (size_t i = 0; i < cap; ++i) { x[i] = rng.uni(-2.f, 2.f); y[i] = rng.uni(-2.f, 2.f); }
    float *dx, *dy, *dz;
    CK(cudaMalloc(&dx, cap * 4)); CK(cudaMalloc(&dy, cap * 4)); CK(cudaMalloc(&dz, cap * 4));
    CK(cudaMemcpy(dx, x.data(), cap * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y.data(), cap * 4, cudaMemcpyHostToDevice));
    fill_poison(dz, cap);
    axpby(n, alpha, dx + xo, beta, dy + yo, dz + zo);
    sync_check(name);
    CK(cudaMemcpy(z.data(), dz + zo, (size_t)(n + kGuard) * 4, cudaMemcpyDeviceToHost));
    bool ok = check(name, x, y, xo, yo, alpha, beta, z, n);
    CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dz));
    if (ok) printf("ok   %s (n=%d)\n", name, n);
    return ok;
}

static int run_tests() {
    Rng rng(20261129);
    bool ok = true;
    ok &= run_case("empty", 0, 1.5f, -0.5f, 0, 0, 0, rng);
    ok &= run_case("single", 1, 2.0f, 3.0f, 0, 0, 0, rng);
    ok &= run_case("tiny", 7, -1.25f, 0.75f, 0, 0, 0, rng);
    ok &= run_case("block-plus-one", 257, 0.5f, 0.5f, 0, 0, 0, rng);
    ok &= run_case("odd-size", 100003, 3.0f, -2.0f, 0, 0, 0, rng);
    ok &= run_case("misaligned-same", 100005, 1.1f, 2.2f, 1, 1, 1, rng);
    ok &= run_case("misaligned-mixed", 65539, -0.3f, 1.7f, 3, 2, 1, rng);
    ok &= run_case("beta-zero", 4099, 2.5f, 0.0f, 0, 0, 0, rng);
    ok &= run_case("alpha-zero", 4101, 0.0f, -1.5f, 2, 0, 2, rng);
    ok &= run_case("large", (1 << 24) + 13, 0.999f, -1.001f, 0, 0, 0, rng);
    ok &= run_case("large-odd", 30000001, -2.0f, 0.125f, 1, 3, 2, rng);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int N = 1 << 26;
    const int R = 8;  // timed calls, each writing its own output buffer
    Rng rng(77 ^ g_bench_mix);
    std::vector<float> x(N), y(N);
    for (int i = 0; i < N; ++i) { x[i] = rng.uni(-2.f, 2.f); y[i] = rng.uni(-2.f, 2.f); }
    float *dx, *dy, *dz, *dwarm;
    CK(cudaMalloc(&dx, (size_t)N * 4)); CK(cudaMalloc(&dy, (size_t)N * 4));
    CK(cudaMalloc(&dwarm, (size_t)N * 4));
    size_t zstride = (size_t)N + kGuard;
    CK(cudaMalloc(&dz, zstride * R * 4));
    CK(cudaMemcpy(dx, x.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    fill_poison(dz, zstride * R);
    for (int w = 0; w < 3; ++w) axpby(N, 1.0f + w, dx, 0.5f, dy, dwarm);
    sync_check("warm-up");
    int ns[R]; float as[R], bs[R];
    for (int r = 0; r < R; ++r) { ns[r] = N - 5 * r; as[r] = 0.75f + 0.25f * r; bs[r] = 1.5f - 0.375f * r; }
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) axpby(ns[r], as[r], dx, bs[r], dy, dz + zstride * r);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<float> z(zstride);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(z.data(), dz + zstride * r, (size_t)(ns[r] + kGuard) * 4, cudaMemcpyDeviceToHost));
        ok = check("perf", x, y, 0, 0, as[r], bs[r], z, ns[r]);
    }
    CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dz)); CK(cudaFree(dwarm));
    if (ok) printf("ok   perf (%d timed calls, n=%d)\n", R, N);
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
