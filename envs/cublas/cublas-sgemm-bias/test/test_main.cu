// Hidden harness for sgemm_bias (column-major C = alpha*A*B + row bias).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>
#include "sgemm_bias.h"

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

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CUBLAS_CHECK(call)                                                            \
    do {                                                                              \
        cublasStatus_t st_ = (call);                                                  \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                           \
            fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)st_, __FILE__, __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

struct Rng {  // fixed-seed 64-bit LCG
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 2862933555777941757ULL + 3037000493ULL) {}
    float uniform(float lo, float hi) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return lo + (hi - lo) * (float)((s >> 40) * (1.0 / 16777216.0));
    }
    uint64_t next(uint64_t mod) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return (s >> 33) % mod;
    }
};

// Tolerance: the reference is computed in double. A float32 GEMM (any summation order) is
// within a few float32 ulps of sum_p |a_ip*b_pj|; 2e-6 of that magnitude leaves >10x headroom
// for FP32 while rejecting reduced-precision (TF32/FP16) math, whose error is ~1e-5 of it.
static bool check_entry(const std::vector<float>& A, const std::vector<float>& B,
                        const std::vector<float>& bias, int m, int k, float alpha,
                        int i, int j, float got, const char* what) {
    double ref = 0.0, mag = 0.0;
    for (int p = 0; p < k; ++p) {
        double prod = (double)A[i + (size_t)p * m] * (double)B[p + (size_t)j * k];
        ref += prod;
        mag += fabs(prod);
    }
    ref = (double)alpha * ref + (double)bias[i];
    double tol = 2e-6 * (fabs((double)alpha) * mag + fabs((double)bias[i]));
    if (!(fabs((double)got - ref) <= tol)) {
        fprintf(stderr, "FAIL %s: C(%d,%d) = %.9g, expected %.9g (tol %.3g)\n", what, i, j,
                (double)got, ref, tol);
        return false;
    }
    return true;
}

struct Dev {
    float *A = nullptr, *B = nullptr, *bias = nullptr;
};

static void upload(Dev& d, const std::vector<float>& A, const std::vector<float>& B,
                   const std::vector<float>& bias) {
    CUDA_CHECK(cudaMalloc(&d.A, std::max<size_t>(A.size(), 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d.B, std::max<size_t>(B.size(), 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d.bias, bias.size() * sizeof(float)));
    if (!A.empty()) CUDA_CHECK(cudaMemcpy(d.A, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (!B.empty()) CUDA_CHECK(cudaMemcpy(d.B, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d.bias, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice));
}

static void release(Dev& d) {
    CUDA_CHECK(cudaFree(d.A));
    CUDA_CHECK(cudaFree(d.B));
    CUDA_CHECK(cudaFree(d.bias));
}

static void make_inputs(Rng& rng, int m, int n, int k, std::vector<float>& A,
                        std::vector<float>& B, std::vector<float>& bias) {
    A.resize((size_t)m * k);
    B.resize((size_t)k * n);
    bias.resize(m);
    for (auto& v : A) v = rng.uniform(-1.0f, 1.0f);
    for (auto& v : B) v = rng.uniform(-1.0f, 1.0f);
    for (auto& v : bias) v = rng.uniform(-2.0f, 2.0f);
}

static bool run_case(cublasHandle_t h, Rng& rng, int m, int n, int k, float alpha) {
    std::vector<float> A, B, bias;
    make_inputs(rng, m, n, k, A, B, bias);
    Dev d;
    upload(d, A, B, bias);
    float* dC = nullptr;
    const size_t csize = (size_t)m * n;
    CUDA_CHECK(cudaMalloc(&dC, csize * sizeof(float)));
    CUDA_CHECK(cudaMemset(dC, 0xFF, csize * sizeof(float)));  // NaN garbage
    sgemm_bias(h, m, n, k, alpha, d.A, d.B, d.bias, dC);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> C(csize);
    CUDA_CHECK(cudaMemcpy(C.data(), dC, csize * sizeof(float), cudaMemcpyDeviceToHost));
    char what[96];
    snprintf(what, sizeof what, "m=%d n=%d k=%d alpha=%g", m, n, k, (double)alpha);
    bool ok = true;
    int bad = 0;
    for (int j = 0; j < n && bad < 5; ++j)
        for (int i = 0; i < m && bad < 5; ++i)
            if (!check_entry(A, B, bias, m, k, alpha, i, j, C[i + (size_t)j * m], what)) {
                ok = false;
                ++bad;
            }
    // inputs must be left unchanged
    std::vector<float> A2(A.size()), bias2(m);
    if (!A.empty()) CUDA_CHECK(cudaMemcpy(A2.data(), d.A, A.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(bias2.data(), d.bias, m * sizeof(float), cudaMemcpyDeviceToHost));
    if (A2 != A || bias2 != bias) {
        fprintf(stderr, "FAIL %s: input A or bias was modified\n", what);
        ok = false;
    }
    CUDA_CHECK(cudaFree(dC));
    release(d);
    if (ok) printf("ok  %s\n", what);
    return ok;
}

static bool run_perf(cublasHandle_t h) {
    const int m = 4096, n = 4096, k = 4096, iters = 5;
    const float alpha = 0.5f;
    Rng rng(777 ^ g_bench_mix);
    std::vector<float> A, B, bias;
    make_inputs(rng, m, n, k, A, B, bias);
    Dev d;
    upload(d, A, B, bias);
    const size_t csize = (size_t)m * n;
    float* warm = nullptr;
    CUDA_CHECK(cudaMalloc(&warm, csize * sizeof(float)));
    std::vector<float*> outs(iters, nullptr);
    for (auto& p : outs) {
        CUDA_CHECK(cudaMalloc(&p, csize * sizeof(float)));
        CUDA_CHECK(cudaMemset(p, 0xFF, csize * sizeof(float)));
    }
    for (int w = 0; w < 3; ++w) sgemm_bias(h, m, n, k, alpha, d.A, d.B, d.bias, warm);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int it = 0; it < iters; ++it) sgemm_bias(h, m, n, k, alpha, d.A, d.B, d.bias, outs[it]);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    // Verify every timed output on a sample of entries (all four corners + random ones).
    bool ok = true;
    std::vector<float> C(csize);
    for (int it = 0; it < iters && ok; ++it) {
        CUDA_CHECK(cudaMemcpy(C.data(), outs[it], csize * sizeof(float), cudaMemcpyDeviceToHost));
        Rng pick((1000 + it) ^ g_bench_mix);
        for (int s = 0; s < 400 && ok; ++s) {
            int i, j;
            if (s < 4) { i = (s & 1) ? m - 1 : 0; j = (s & 2) ? n - 1 : 0; }
            else { i = (int)pick.next(m); j = (int)pick.next(n); }
            ok = check_entry(A, B, bias, m, k, alpha, i, j, C[i + (size_t)j * m], "perf");
        }
        for (size_t q = 0; q < csize && ok; ++q)
            if (std::isnan(C[q])) {
                fprintf(stderr, "FAIL perf: call %d left C[%zu] unwritten\n", it, q);
                ok = false;
            }
    }
    for (auto p : outs) CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(warm));
    release(d);
    if (ok) printf("ok  perf m=%d n=%d k=%d x%d\n", m, n, k, iters);
    return ok;
}

int main(int argc, char** argv) {
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();

    bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    bool ok = true;
    if (perf) {
        ok = run_perf(h);
    } else {
        Rng rng(20261129);
        struct { int m, n, k; float alpha; } cases[] = {
            {1, 1, 1, 1.0f},      {37, 53, 29, 1.5f},   {128, 64, 256, -0.75f},
            {200, 1, 300, 1.0f},  {1, 300, 17, 2.0f},   {65, 67, 0, 1.0f},
            {96, 80, 40, 0.0f},   {513, 385, 641, 0.5f},
        };
        for (auto& c : cases) ok = run_case(h, rng, c.m, c.n, c.k, c.alpha) && ok;
    }
    CUBLAS_CHECK(cublasDestroy(h));
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
