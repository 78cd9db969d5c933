// Hidden harness for batched_gemm (strided batch of small column-major GEMMs).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>
#include "batched_gemm.h"

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
};

struct Problem {
    int m, n, k, batch;
    std::vector<float> A, B;
    float *dA = nullptr, *dB = nullptr;
};

static void make_problem(Problem& p, uint64_t seed) {
    Rng rng(seed);
    p.A.resize((size_t)p.batch * p.m * p.k);
    p.B.resize((size_t)p.batch * p.k * p.n);
    for (auto& v : p.A) v = rng.uniform(-1.0f, 1.0f);
    for (auto& v : p.B) v = rng.uniform(-1.0f, 1.0f);
    CUDA_CHECK(cudaMalloc(&p.dA, std::max<size_t>(p.A.size(), 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&p.dB, std::max<size_t>(p.B.size(), 1) * sizeof(float)));
    if (!p.A.empty())
        CUDA_CHECK(cudaMemcpy(p.dA, p.A.data(), p.A.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (!p.B.empty())
        CUDA_CHECK(cudaMemcpy(p.dB, p.B.data(), p.B.size() * sizeof(float), cudaMemcpyHostToDevice));
}

static void free_problem(Problem& p) {
    CUDA_CHECK(cudaFree(p.dA));
    CUDA_CHECK(cudaFree(p.dB));
}

// Compare a downloaded C (all batches) with a double-precision CPU product.
// Tolerance: 2e-6 * sum_p |a_ip*b_pj|. Any FP32 summation order stays within a few float32
// ulps of that magnitude (>10x headroom); TF32/FP16 math (error ~1e-5 of it) is rejected.
static bool check_all(const Problem& p, const std::vector<float>& C, const char* what) {
    const int m = p.m, n = p.n, k = p.k;
    int bad = 0;
    for (int b = 0; b < p.batch; ++b) {
        const float* A = p.A.data() + (size_t)b * m * k;
        const float* B = p.B.data() + (size_t)b * k * n;
        const float* Cb = C.data() + (size_t)b * m * n;
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) {
                double ref = 0.0, mag = 0.0;
                for (int q = 0; q < k; ++q) {
                    double prod = (double)A[i + (size_t)q * m] * (double)B[q + (size_t)j * k];
                    ref += prod;
                    mag += fabs(prod);
                }
                double got = Cb[i + (size_t)j * m];
                if (!(fabs(got - ref) <= 2e-6 * mag)) {
                    if (bad < 5)
                        fprintf(stderr, "FAIL %s: batch %d C(%d,%d) = %.9g, expected %.9g\n",
                                what, b, i, j, got, ref);
                    ++bad;
                }
            }
    }
    if (bad) fprintf(stderr, "FAIL %s: %d wrong elements\n", what, bad);
    return bad == 0;
}

static bool run_case(cublasHandle_t h, int m, int n, int k, int batch, uint64_t seed) {
    Problem p{m, n, k, batch, {}, {}};
    make_problem(p, seed);
    const size_t csize = (size_t)batch * m * n;
    float* dC = nullptr;
    // one extra guard matrix after the batch: must not be touched
    const size_t guard = (size_t)m * n;
    CUDA_CHECK(cudaMalloc(&dC, (csize + guard) * sizeof(float)));
    CUDA_CHECK(cudaMemset(dC, 0xFF, (csize + guard) * sizeof(float)));
    batched_gemm(h, m, n, k, batch, p.dA, p.dB, dC);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> C(csize + guard);
    CUDA_CHECK(cudaMemcpy(C.data(), dC, (csize + guard) * sizeof(float), cudaMemcpyDeviceToHost));
    char what[96];
    snprintf(what, sizeof what, "m=%d n=%d k=%d batch=%d", m, n, k, batch);
    bool ok = check_all(p, C, what);
    for (size_t q = csize; q < csize + guard; ++q) {
        uint32_t bits;
        memcpy(&bits, &C[q], 4);
        if (bits != 0xFFFFFFFFu) {
            fprintf(stderr, "FAIL %s: wrote past the end of C\n", what);
            ok = false;
            break;
        }
    }
    std::vector<float> A2(p.A.size());
    if (!A2.empty())
        CUDA_CHECK(cudaMemcpy(A2.data(), p.dA, A2.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (A2 != p.A) {
        fprintf(stderr, "FAIL %s: input A was modified\n", what);
        ok = false;
    }
    CUDA_CHECK(cudaFree(dC));
    free_problem(p);
    if (ok) printf("ok  %s\n", what);
    return ok;
}

static bool run_perf(cublasHandle_t h) {
    const int m = 32, n = 32, k = 32, batch = 8192, iters = 5;
    Problem p{m, n, k, batch, {}, {}};
    make_problem(p, 4242 ^ g_bench_mix);
    const size_t csize = (size_t)batch * m * n;
    float* warm = nullptr;
    CUDA_CHECK(cudaMalloc(&warm, csize * sizeof(float)));
    std::vector<float*> outs(iters, nullptr);
    for (auto& o : outs) {
        CUDA_CHECK(cudaMalloc(&o, csize * sizeof(float)));
        CUDA_CHECK(cudaMemset(o, 0xFF, csize * sizeof(float)));
    }
    for (int w = 0; w < 3; ++w) batched_gemm(h, m, n, k, batch, p.dA, p.dB, warm);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int it = 0; it < iters; ++it) batched_gemm(h, m, n, k, batch, p.dA, p.dB, outs[it]);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    bool ok = true;
    std::vector<float> C(csize);
    for (int it = 0; it < iters && ok; ++it) {
        CUDA_CHECK(cudaMemcpy(C.data(), outs[it], csize * sizeof(float), cudaMemcpyDeviceToHost));
        ok = check_all(p, C, "perf");
    }
    for (auto o : outs) CUDA_CHECK(cudaFree(o));
    CUDA_CHECK(cudaFree(warm));
    free_problem(p);
    if (ok) printf("ok  perf m=%d n=%d k=%d batch=%d x%d\n", m, n, k, batch, iters);
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
        struct { int m, n, k, batch; } cases[] = {
            {1, 1, 1, 1},    {3, 5, 7, 10},    {16, 16, 16, 100}, {32, 20, 48, 37},
            {64, 64, 64, 9}, {5, 100, 3, 3},   {17, 1, 33, 250},  {8, 8, 8, 0},
            {96, 72, 130, 2},
        };
        uint64_t seed = 20261129;
        for (auto& c : cases) ok = run_case(h, c.m, c.n, c.k, c.batch, seed++) && ok;
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
