// Hidden harness for reduce-sum: *out = sum of x[0..n).
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "reduce_sum.h"

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

// Tolerance: |got - exact| <= 5e-5 * sum|x_i| + 1e-6. Any float reduction whose partial sums
// are combined as a tree (or by atomics over per-block / per-warp partials) stays well inside
// this; the exact sum is accumulated here in double. Summing 2^26 elements one by one into a
// single float does not (it stagnates once the running sum is large), and a missing element
// is caught by the small cases and by the "spike" case.
static bool check_sum(const char* name, float got, double ref, double abs_sum, int n) {
    double tol = 5e-5 * abs_sum + 1e-6;
    if (!(fabs((double)got - ref) <= tol)) {
        fprintf(stderr, "FAIL %s: got %.9g, expected %.9g (tol %.3g, n=%d)\n", name, got, ref, tol, n);
        return false;
    }
    return true;
}

static void poison(float* d, int count) {
    std::vector<float> h(count, nanf(""));
    CK(cudaMemcpy(d, h.data(), (size_t)count * 4, cudaMemcpyHostToDevice));
}

// Runs reduce_sum on h[off .. off+n) (copied into a device buffer at the same offset).
static bool run_case(const char* name, const std::vector<float>& h, int off, int n) {
    float *dx, *dout;
    size_t cap = h.size() ? h.size() : 1;
    CK(cudaMalloc(&dx, cap * 4));
    CK(cudaMalloc(&dout, 4));
    if (!h.empty()) CK(cudaMemcpy(dx, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    poison(dout, 1);
    reduce_sum(dx + off, n, dout);
    sync_check(name);
    float got;
    CK(cudaMemcpy(&got, dout, 4, cudaMemcpyDeviceToHost));
    double ref = 0.0, abs_sum = 0.0;
    for (int i = 0; i < n; ++i) { ref += h[off + i]; abs_sum += fabs((double)h[off + i]); }
    bool ok = true;
    if (n == 0) {
        ok = (got == 0.0f);
        if (!ok) fprintf(stderr, "FAIL %s: n=0 must give 0, got %.9g\n", name, got);
    } else {
        ok = check_sum(name, got, ref, abs_sum, n);
    }
    CK(cudaFree(dx)); CK(cudaFree(dout));
    if (ok) printf("ok   %s (n=%d)\n", name, n);
    return ok;
}

static std::vector<float> uniform(size_t count, float lo, float hi, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> h(count);
    for (auto& v : h) v = rng.uni(lo, hi);
    return h;
}

static int run_tests() {
    bool ok = true;
    ok &= run_case("empty", std::vector<float>(4, 1.0f), 0, 0);
    ok &= run_case("single", std::vector<float>{3.25f}, 0, 1);
    const int sizes[] = {2, 31, 32, 33, 255, 1000, 1025, 4096, 65537, 1 << 20, 10000019};
    for (int n : sizes) {
        char name[64];
        snprintf(name, sizeof name, "uniform-%d", n);
        ok &= run_case(name, uniform((size_t)n, -0.5f, 1.0f, 1000 + n), 0, n);
    }
    ok &= run_case("misaligned+1", uniform(1000004, -0.5f, 1.0f, 11), 1, 1000003);
    ok &= run_case("misaligned+3", uniform(777780, -1.0f, 0.25f, 12), 3, 777777);
    ok &= run_case("all-ones", std::vector<float>(1 << 24, 1.0f), 0, 1 << 24);
    ok &= run_case("cancelling", uniform(2000001, -1.0f, 1.0f, 13), 0, 2000001);
    {
        std::vector<float> h = uniform(3000001, -1e-3f, 1e-3f, 14);
        h[1234567] = 1000.0f;  // one large element hidden among tiny ones
        ok &= run_case("spike", h, 0, (int)h.size());
    }
    ok &= run_case("huge", uniform((size_t)1 << 26, -0.5f, 1.0f, 15), 0, 1 << 26);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int N = 1 << 26;
    const int R = 8;  // timed calls, each on a different sub-range and output slot
    std::vector<float> h = uniform((size_t)N, -0.5f, 1.0f, 99 ^ g_bench_mix);
    float *dx, *dout, *dwarm;
    CK(cudaMalloc(&dx, (size_t)N * 4));
    CK(cudaMalloc(&dout, R * 4));
    CK(cudaMalloc(&dwarm, 4));
    CK(cudaMemcpy(dx, h.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    poison(dout, R);
    for (int w = 0; w < 3; ++w) reduce_sum(dx, N, dwarm);
    sync_check("warm-up");
    int offs[R], ns[R];
    for (int r = 0; r < R; ++r) { offs[r] = 4 * r; ns[r] = N - 8 * r - 1; }
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) reduce_sum(dx + offs[r], ns[r], dout + r);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    float got[R];
    CK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (int r = 0; r < R; ++r) {
        double ref = 0.0, abs_sum = 0.0;
        for (int i = 0; i < ns[r]; ++i) { ref += h[offs[r] + i]; abs_sum += fabs((double)h[offs[r] + i]); }
        ok &= check_sum("perf", got[r], ref, abs_sum, ns[r]);
    }
    CK(cudaFree(dx)); CK(cudaFree(dout)); CK(cudaFree(dwarm));
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
