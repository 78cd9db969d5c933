// Hidden harness for gemv_rows (row-major y = A*x through column-major cuBLAS).
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
#include "gemv_rows.h"

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
    int rows, cols;
    std::vector<float> A, x;
    std::vector<double> ref, mag;  // exact y and sum_j |A_ij x_j|
    float *dA = nullptr, *dx = nullptr;
};

static void make_problem(Problem& p, uint64_t seed) {
    Rng rng(seed);
    p.A.resize((size_t)p.rows * p.cols);
    p.x.resize(p.cols);
    for (auto& v : p.A) v = rng.uniform(-1.0f, 1.0f);
    for (auto& v : p.x) v = rng.uniform(-2.0f, 2.0f);
    p.ref.assign(p.rows, 0.0);
    p.mag.assign(p.rows, 0.0);
    for (int i = 0; i < p.rows; ++i) {
        const float* row = p.A.data() + (size_t)i * p.cols;
        double s = 0.0, m = 0.0;
        for (int j = 0; j < p.cols; ++j) {
            double prod = (double)row[j] * (double)p.x[j];
            s += prod;
            m += fabs(prod);
        }
        p.ref[i] = s;
        p.mag[i] = m;
    }
    CUDA_CHECK(cudaMalloc(&p.dA, std::max<size_t>(p.A.size(), 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&p.dx, std::max<size_t>(p.x.size(), 1) * sizeof(float)));
    if (!p.A.empty())
        CUDA_CHECK(cudaMemcpy(p.dA, p.A.data(), p.A.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (!p.x.empty())
        CUDA_CHECK(cudaMemcpy(p.dx, p.x.data(), p.x.size() * sizeof(float), cudaMemcpyHostToDevice));
}

static void free_problem(Problem& p) {
    CUDA_CHECK(cudaFree(p.dA));
    CUDA_CHECK(cudaFree(p.dx));
}

// Tolerance: 1e-5 * sum_j |A_ij * x_j| (reference in double). Float32 accumulation in any
// order stays far below this (a few 2^-24 units of that magnitude for random-sign data).
static bool check_y(const Problem& p, const std::vector<float>& y, const char* what) {
    int bad = 0;
    for (int i = 0; i < p.rows; ++i) {
        double got = y[i];
        if (!(fabs(got - p.ref[i]) <= 1e-5 * p.mag[i])) {
            if (bad < 5)
                fprintf(stderr, "FAIL %s: y[%d] = %.9g, expected %.9g\n", what, i, got, p.ref[i]);
            ++bad;
        }
    }
    if (bad) fprintf(stderr, "FAIL %s: %d wrong elements\n", what, bad);
    return bad == 0;
}

static bool run_case(cublasHandle_t h, int rows, int cols, uint64_t seed) {
    Problem p{rows, cols, {}, {}, {}, {}};
    make_problem(p, seed);
    const int guard = 32;
    float* dy = nullptr;
    CUDA_CHECK(cudaMalloc(&dy, (size_t)(rows + guard) * sizeof(float)));
    CUDA_CHECK(cudaMemset(dy, 0xFF, (size_t)(rows + guard) * sizeof(float)));
    gemv_rows(h, rows, cols, p.dA, p.dx, dy);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> y(rows + guard);
    CUDA_CHECK(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
    char what[64];
    snprintf(what, sizeof what, "rows=%d cols=%d", rows, cols);
    bool ok = check_y(p, y, what);
    for (int i = rows; i < rows + guard; ++i) {
        uint32_t bits;
        memcpy(&bits, &y[i], 4);
        if (bits != 0xFFFFFFFFu) {
            fprintf(stderr, "FAIL %s: wrote past the end of y\n", what);
            ok = false;
            break;
        }
    }
    std::vector<float> A2(p.A.size());
    if (!A2.empty())
        CUDA_CHECK(cudaMemcpy(A2.data(), p.dA, A2.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (A2 != p.A) {
        fprintf(stderr, "FAIL %s: A was modified\n", what);
        ok = false;
    }
    CUDA_CHECK(cudaFree(dy));
    free_problem(p);
    if (ok) printf("ok  %s\n", what);
    return ok;
}

static bool run_perf(cublasHandle_t h) {
    const int rows = 12288, cols = 12288, iters = 10;
    Problem p{rows, cols, {}, {}, {}, {}};
    make_problem(p, 99 ^ g_bench_mix);
    float* warm = nullptr;
    CUDA_CHECK(cudaMalloc(&warm, (size_t)rows * sizeof(float)));
    std::vector<float*> outs(iters, nullptr);
    for (auto& o : outs) {
        CUDA_CHECK(cudaMalloc(&o, (size_t)rows * sizeof(float)));
        CUDA_CHECK(cudaMemset(o, 0xFF, (size_t)rows * sizeof(float)));
    }
    for (int w = 0; w < 3; ++w) gemv_rows(h, rows, cols, p.dA, p.dx, warm);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int it = 0; it < iters; ++it) gemv_rows(h, rows, cols, p.dA, p.dx, outs[it]);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    bool ok = true;
    std::vector<float> y(rows);
    for (int it = 0; it < iters && ok; ++it) {
        CUDA_CHECK(cudaMemcpy(y.data(), outs[it], (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost));
        ok = check_y(p, y, "perf");
    }
    for (auto o : outs) CUDA_CHECK(cudaFree(o));
    CUDA_CHECK(cudaFree(warm));
    free_problem(p);
    if (ok) printf("ok  perf rows=%d cols=%d x%d\n", rows, cols, iters);
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
        struct { int rows, cols; } cases[] = {
            {0, 5},    {5, 0},       {1, 1},      {1, 1000},  {1000, 1},
            {333, 517}, {64, 4096},  {4099, 257}, {2048, 3000},
        };
        uint64_t seed = 20261129;
        for (auto& c : cases) ok = run_case(h, c.rows, c.cols, seed++) && ok;
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
