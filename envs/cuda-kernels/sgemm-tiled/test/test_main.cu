// Hidden harness for sgemm-tiled: C = A * B, row-major, FP32.
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "sgemm.h"

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
static const uint32_t kPoison = 0x7FC0CAFEu;  // NaN bit pattern written to C beforehand

static void poison(float* d, size_t count) {
    std::vector<uint32_t> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// Tolerance: |C - exact| <= 4e-6 * sum_k |A[i][k] * B[k][j]| + 1e-30. Plain FP32 FMA
// accumulation in any order has a typical error around 1e-7 of that bound's scale, far
// inside it. TF32/BF16/FP16 inputs carry a relative rounding error of 2^-11 or worse per
// product, which exceeds the bound at small K (the tests include K = 1..7): full FP32 is
// required.
static bool close_enough(float got, double ref, double abs_ref) {
    return fabs((double)got - ref) <= 4e-6 * abs_ref + 1e-30;
}

static std::vector<float> random_matrix(size_t count, uint64_t seed, bool small_ints) {
    Rng rng(seed);
    std::vector<float> h(count);
    for (auto& v : h) v = small_ints ? (float)((int)(rng.next() % 9) - 4) : rng.uni(-1.f, 1.f);
    return h;
}

static bool run_case(int M, int N, int K, bool small_ints = false) {
    char name[80];
    snprintf(name, sizeof name, "%dx%dx%d%s", M, N, K, small_ints ? "-ints" : "");
    std::vector<float> A = random_matrix((size_t)M * K, 7919ULL * M + 31ULL * N + K, small_ints);
    std::vector<float> B = random_matrix((size_t)K * N, 104729ULL * N + K, small_ints);
    size_t nc = (size_t)M * N;
    float *dA, *dB, *dC;
    CK(cudaMalloc(&dA, A.size() * 4)); CK(cudaMalloc(&dB, B.size() * 4));
    CK(cudaMalloc(&dC, (nc + kGuard) * 4));
    CK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
    poison(dC, nc + kGuard);
    sgemm(M, N, K, dA, dB, dC);
    sync_check(name);
    std::vector<float> C(nc + kGuard);
    CK(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(dC));

    std::vector<double> ref(N), abs_ref(N);
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) { ref[j] = 0.0; abs_ref[j] = 0.0; }
        for (int k = 0; k < K; ++k) {
            double a = A[(size_t)i * K + k];
            const float* brow = &B[(size_t)k * N];
            for (int j = 0; j < N; ++j) {
                double p = a * brow[j];
                ref[j] += p;
                abs_ref[j] += fabs(p);
            }
        }
        for (int j = 0; j < N; ++j)
            if (!close_enough(C[(size_t)i * N + j], ref[j], abs_ref[j])) {
                fprintf(stderr, "FAIL %s: C[%d][%d] = %.9g, expected %.9g\n", name, i, j,
                        C[(size_t)i * N + j], ref[j]);
                return false;
            }
    }
    for (size_t i = nc; i < nc + kGuard; ++i) {
        uint32_t u;
        memcpy(&u, &C[i], 4);
        if (u != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past the end of C (index %zu)\n", name, i);
            return false;
        }
    }
    printf("ok   %s\n", name);
    return true;
}

static int run_tests() {
    const int shapes[][3] = {{1, 1, 1},     {1, 1, 2},      {2, 3, 1},       {3, 5, 7},
                             {16, 16, 16},  {17, 33, 5},    {64, 64, 64},    {65, 63, 3},
                             {129, 250, 77}, {1000, 1, 300}, {1, 1000, 300},  {513, 257, 1031},
                             {255, 257, 2049}, {5000, 37, 11}, {37, 5000, 11}, {1024, 1024, 1024}};
    bool ok = true;
    for (auto& s : shapes) ok &= run_case(s[0], s[1], s[2]);
    ok &= run_case(300, 200, 500, true);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int S = 4096;  // square problems; even calls compute A*B, odd calls B*A
    const int R = 4;
    const size_t n = (size_t)S * S, stride = n + kGuard;
    std::vector<float> A = random_matrix(n, 11 ^ g_bench_mix, false), B = random_matrix(n, 12 ^ g_bench_mix, false);
    float *dA, *dB, *dC, *dwarm;
    CK(cudaMalloc(&dA, n * 4)); CK(cudaMalloc(&dB, n * 4)); CK(cudaMalloc(&dwarm, n * 4));
    CK(cudaMalloc(&dC, stride * R * 4));
    CK(cudaMemcpy(dA, A.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), n * 4, cudaMemcpyHostToDevice));
    poison(dC, stride * R);
    for (int w = 0; w < 3; ++w) sgemm(S, S, S, dA, dB, dwarm);
    sync_check("warm-up");
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) {
        if (r % 2 == 0) sgemm(S, S, S, dA, dB, dC + stride * r);
        else sgemm(S, S, S, dB, dA, dC + stride * r);
    }
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<float> C(stride);
    Rng rng(5 ^ g_bench_mix);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(C.data(), dC + stride * r, stride * 4, cudaMemcpyDeviceToHost));
        const std::vector<float>& X = (r % 2 == 0) ? A : B;
        const std::vector<float>& Y = (r % 2 == 0) ? B : A;
        for (size_t i = 0; i < n && ok; ++i)
            if (!std::isfinite(C[i])) {
                fprintf(stderr, "FAIL perf: call %d left C[%zu] unwritten or non-finite\n", r, i);
                ok = false;
            }
        for (size_t i = n; i < stride && ok; ++i) {
            uint32_t u;
            memcpy(&u, &C[i], 4);
            if (u != kPoison) { fprintf(stderr, "FAIL perf: wrote past the end of C\n"); ok = false; }
        }
        for (int s = 0; s < 4096 && ok; ++s) {  // random entries plus the four corners
            int i = (int)(rng.next() % S), j = (int)(rng.next() % S);
            if (s < 4) { i = (s & 1) ? S - 1 : 0; j = (s & 2) ? S - 1 : 0; }
            double ref = 0.0, abs_ref = 0.0;
            for (int k = 0; k < S; ++k) {
                double p = (double)X[(size_t)i * S + k] * Y[(size_t)k * S + j];
                ref += p;
                abs_ref += fabs(p);
            }
            if (!close_enough(C[(size_t)i * S + j], ref, abs_ref)) {
                fprintf(stderr, "FAIL perf: call %d C[%d][%d] = %.9g, expected %.9g\n", r, i, j,
                        C[(size_t)i * S + j], ref);
                ok = false;
            }
        }
    }
    CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(dC)); CK(cudaFree(dwarm));
    if (ok) printf("ok   perf (%d timed calls, %dx%dx%d)\n", R, S, S, S);
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
