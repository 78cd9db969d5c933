// Hidden harness for axpy_dot (cublasSaxpy followed by cublasSdot).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "axpy_dot.h"

static char g_token[160];

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

static bool run_case(cublasHandle_t h, int n, float a, uint64_t seed, bool positive) {
    Rng rng(seed);
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
        x[i] = positive ? rng.uniform(0.0f, 1.0f) : rng.uniform(-1.0f, 1.0f);
        y[i] = positive ? rng.uniform(0.0f, 1.0f) : rng.uniform(-3.0f, 3.0f);
    }
    // guard elements after the arrays must stay untouched
    const int guard = 64;
    float *dx = nullptr, *dy = nullptr;
    CUDA_CHECK(cudaMalloc(&dx, (size_t)(n + guard) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)(n + guard) * sizeof(float)));
    std::vector<float> xg(x), yg(y);
    xg.resize(n + guard, 123.0f);
    yg.resize(n + guard, -77.0f);
    CUDA_CHECK(cudaMemcpy(dx, xg.data(), xg.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dy, yg.data(), yg.size() * sizeof(float), cudaMemcpyHostToDevice));

    float dot = axpy_dot(h, n, a, dx, dy);
    CUDA_CHECK(cudaGetLastError());
    // y must already be final when the function returns: copy it without an explicit sync
    // other than the one cudaMemcpy implies on the default stream.
    std::vector<float> ygot(n + guard), xgot(n + guard);
    CUDA_CHECK(cudaMemcpy(ygot.data(), dy, ygot.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(xgot.data(), dx, xgot.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaDeviceSynchronize());

    char what[96];
    snprintf(what, sizeof what, "n=%d a=%g%s", n, (double)a, positive ? " (positive data)" : "");
    bool ok = true;
    int bad = 0;
    // y tolerance: a*x+y in float32 (with or without FMA) is within two rounding errors,
    // i.e. 2 * 2^-24 * (|a*x| + |y|); we allow 2.5e-7 * (|a*x| + |y|).
    for (int i = 0; i < n; ++i) {
        double ax = (double)a * x[i];
        double ref = ax + y[i];
        double tol = 2.5e-7 * (fabs(ax) + fabs((double)y[i]));
        if (!(fabs((double)ygot[i] - ref) <= tol)) {
            if (bad < 5)
                fprintf(stderr, "FAIL %s: y[%d] = %.9g, expected %.9g\n", what, i, (double)ygot[i], ref);
            ++bad;
            ok = false;
        }
    }
    for (int i = n; i < n + guard; ++i)
        if (ygot[i] != -77.0f || xgot[i] != 123.0f) {
            fprintf(stderr, "FAIL %s: wrote past the end of x or y\n", what);
            ok = false;
            break;
        }
    for (int i = 0; i < n; ++i)
        if (xgot[i] != x[i]) {
            fprintf(stderr, "FAIL %s: x was modified\n", what);
            ok = false;
            break;
        }
    // dot tolerance: reference in double over the y the GPU produced. A float32 dot product
    // (any summation order) is within ~log2(n)*2^-24 of sum|x*y| for tree sums; 2e-5 also
    // covers sequential float32 accumulation of all-positive data up to a few million terms.
    double ref = 0.0, mag = 0.0;
    for (int i = 0; i < n; ++i) {
        double prod = (double)x[i] * (double)ygot[i];
        ref += prod;
        mag += fabs(prod);
    }
    if (!(fabs((double)dot - ref) <= 2e-5 * mag)) {
        fprintf(stderr, "FAIL %s: dot = %.9g, expected %.9g (tol %.3g)\n", what, (double)dot, ref,
                2e-5 * mag);
        ok = false;
    }
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dy));
    if (ok) printf("ok  %s dot=%.7g\n", what, (double)dot);
    return ok;
}

int main() {
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");

    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    struct { int n; float a; bool positive; } cases[] = {
        {0, 2.0f, false},        {1, 1.5f, false},      {7, -2.25f, false},
        {1000, 0.0f, false},     {4097, 3.0f, false},   {1 << 20, -0.5f, false},
        {1000003, 1.0f, true},   {5000011, 0.75f, false},
    };
    bool ok = true;
    uint64_t seed = 20261129;
    for (auto& c : cases) ok = run_case(h, c.n, c.a, seed++, c.positive) && ok;

    // The handle must be left in its default pointer mode.
    cublasPointerMode_t mode;
    CUBLAS_CHECK(cublasGetPointerMode(h, &mode));
    if (mode != CUBLAS_POINTER_MODE_HOST) {
        fprintf(stderr, "FAIL: handle pointer mode was not restored\n");
        ok = false;
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
