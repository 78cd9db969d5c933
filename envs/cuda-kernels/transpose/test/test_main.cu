// Hidden harness for transpose: out (cols x rows) = transpose of in (rows x cols).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "transpose.h"

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
};

static const int kGuard = 64;                // floats after the output that must stay untouched
static const uint32_t kPoison = 0x7FC0BEEFu;  // NaN bit pattern written to the output beforehand

static void poison(float* d, size_t count) {
    std::vector<uint32_t> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// Distinct finite values (bit patterns of floats in [1, 2) with random mantissas, random sign).
static std::vector<float> random_matrix(size_t count, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> h(count);
    for (auto& v : h) {
        uint64_t r = rng.next();
        uint32_t bits = 0x3F800000u | (uint32_t)(r & 0x7FFFFFu) | ((uint32_t)(r >> 63) << 31);
        memcpy(&v, &bits, 4);
    }
    return h;
}

// Bitwise comparison, walked in 32x32 blocks so the strided side stays in cache.
static bool check(const char* name, const float* in, const float* out, int rows, int cols) {
    for (int rb = 0; rb < rows; rb += 32)
        for (int cb = 0; cb < cols; cb += 32)
            for (int c = cb; c < cols && c < cb + 32; ++c)
                for (int r = rb; r < rows && r < rb + 32; ++r) {
                    const float* want = &in[(size_t)r * cols + c];
                    const float* got = &out[(size_t)c * rows + r];
                    if (memcmp(want, got, 4) != 0) {
                        fprintf(stderr, "FAIL %s: out[%d][%d] = %g, expected in[%d][%d] = %g (%dx%d)\n",
                                name, c, r, *got, r, c, *want, rows, cols);
                        return false;
                    }
                }
    size_t n = (size_t)rows * cols;
    for (size_t i = n; i < n + kGuard; ++i) {
        uint32_t u;
        memcpy(&u, &out[i], 4);
        if (u != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past the end of out (index %zu, %dx%d)\n", name, i, rows, cols);
            return false;
        }
    }
    return true;
}

static bool run_case(int rows, int cols, int io = 0, int oo = 0) {
    char name[64];
    snprintf(name, sizeof name, "%dx%d%s", rows, cols, (io || oo) ? "-offset" : "");
    size_t n = (size_t)rows * cols, cap = n + kGuard + 8;
    std::vector<float> h = random_matrix(n, 1000003ULL * rows + cols);
    float *din, *dout;
    CK(cudaMalloc(&din, cap * 4));
    CK(cudaMalloc(&dout, cap * 4));
    if (n) CK(cudaMemcpy(din + io, h.data(), n * 4, cudaMemcpyHostToDevice));
    poison(dout, cap);
    transpose(din + io, dout + oo, rows, cols);
    sync_check(name);
    std::vector<float> got(n + kGuard);
    CK(cudaMemcpy(got.data(), dout + oo, got.size() * 4, cudaMemcpyDeviceToHost));
    bool ok = check(name, h.data(), got.data(), rows, cols);
    CK(cudaFree(din)); CK(cudaFree(dout));
    if (ok) printf("ok   %s\n", name);
    return ok;
}

static int run_tests() {
    const int shapes[][2] = {{0, 5}, {5, 0}, {0, 0}, {1, 1}, {1, 37}, {37, 1}, {31, 33}, {32, 32},
                             {33, 31}, {64, 96}, {100, 1000}, {1000, 100}, {1023, 1025},
                             {4097, 3001}, {3, 100003}, {100003, 3}, {3000001, 2}, {2, 3000001}};
    bool ok = true;
    for (auto& s : shapes) ok &= run_case(s[0], s[1]);
    ok &= run_case(257, 129, 1, 3);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int A = 7001, B = 5003;  // timed calls alternate between A x B and B x A
    const int R = 8;
    const size_t n = (size_t)A * B, stride = n + kGuard;
    std::vector<float> h = random_matrix(n, 42 ^ g_bench_mix);
    float *din, *dout, *dwarm;
    CK(cudaMalloc(&din, n * 4));
    CK(cudaMalloc(&dwarm, n * 4));
    CK(cudaMalloc(&dout, stride * R * 4));
    CK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
    poison(dout, stride * R);
    for (int w = 0; w < 3; ++w) transpose(din, dwarm, A, B);
    sync_check("warm-up");
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) {
        if (r % 2 == 0) transpose(din, dout + stride * r, A, B);
        else transpose(din, dout + stride * r, B, A);
    }
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<float> got(stride);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(got.data(), dout + stride * r, stride * 4, cudaMemcpyDeviceToHost));
        ok = (r % 2 == 0) ? check("perf", h.data(), got.data(), A, B)
                          : check("perf", h.data(), got.data(), B, A);
    }
    CK(cudaFree(din)); CK(cudaFree(dout)); CK(cudaFree(dwarm));
    if (ok) printf("ok   perf (%d timed calls, %dx%d and %dx%d)\n", R, A, B, B, A);
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
