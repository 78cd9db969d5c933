// Hidden harness for scan-inclusive: out[i] = in[0] + ... + in[i].
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "scan.h"

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
    int range(int lo, int hi) { return lo + (int)(next() % (uint64_t)(hi - lo + 1)); }
};

static const int kGuard = 64;           // ints after the output that must stay untouched
static const int kPoison = 0x5EEDF00D;  // fill value of the output before each call

static void poison(int* d, size_t count) {
    std::vector<int> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

// Exact comparison of got[0..n) with the scan of in[0..n); got[n..n+kGuard) must be poison.
static bool check(const char* name, const int* in, const int* got, int n) {
    int64_t run = 0;
    for (int i = 0; i < n; ++i) {
        run += in[i];
        if ((int64_t)got[i] != run) {
            fprintf(stderr, "FAIL %s: out[%d] = %d, expected %lld (n=%d)\n", name, i, got[i],
                    (long long)run, n);
            return false;
        }
    }
    for (int i = n; i < n + kGuard; ++i)
        if (got[i] != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past the end of out (index %d, n=%d)\n", name, i, n);
            return false;
        }
    return true;
}

// in/out placed at element offsets io/oo inside their device buffers.
static bool run_case(const char* name, const std::vector<int>& h, int io, int oo) {
    int n = (int)h.size();
    size_t cap = (size_t)n + kGuard + 8;
    int *din, *dout;
    CK(cudaMalloc(&din, cap * 4));
    CK(cudaMalloc(&dout, cap * 4));
    poison(din, cap);
    if (n > 0) CK(cudaMemcpy(din + io, h.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
    poison(dout, cap);
    inclusive_scan(din + io, dout + oo, n);
    sync_check(name);
    std::vector<int> got((size_t)n + kGuard);
    CK(cudaMemcpy(got.data(), dout + oo, got.size() * 4, cudaMemcpyDeviceToHost));
    // The input must not have been modified.
    std::vector<int> back(n > 0 ? n : 1);
    if (n > 0) CK(cudaMemcpy(back.data(), din + io, (size_t)n * 4, cudaMemcpyDeviceToHost));
    bool ok = check(name, h.data(), got.data(), n);
    if (ok && n > 0 && memcmp(back.data(), h.data(), (size_t)n * 4) != 0) {
        fprintf(stderr, "FAIL %s: the input array was modified\n", name);
        ok = false;
    }
    CK(cudaFree(din)); CK(cudaFree(dout));
    if (ok) printf("ok   %s (n=%d)\n", name, n);
    return ok;
}

static std::vector<int> random_ints(size_t n, int lo, int hi, uint64_t seed) {
    Rng rng(seed);
    std::vector<int> h(n);
    for (auto& v : h) v = rng.range(lo, hi);
    return h;
}

static int run_tests() {
    bool ok = true;
    ok &= run_case("empty", {}, 0, 0);
    ok &= run_case("single", {-42}, 0, 0);
    const int sizes[] = {2, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 2047, 2048, 2049,
                         4095, 4097, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1, 4194305};
    for (int n : sizes) {
        char name[64];
        snprintf(name, sizeof name, "random-%d", n);
        ok &= run_case(name, random_ints((size_t)n, -8, 8, 500 + n), 0, 0);
    }
    ok &= run_case("all-ones", std::vector<int>(3000017, 1), 0, 0);
    ok &= run_case("large-values", random_ints(5003, -400000, 400000, 7), 0, 0);
    ok &= run_case("misaligned", random_ints(1000003, -8, 8, 8), 1, 3);
    ok &= run_case("negative-drift", random_ints(9000001, -20, 3, 9), 0, 0);
    ok &= run_case("huge", random_ints((size_t)(1 << 26) + 5, -8, 8, 10), 0, 0);
    return ok ? 0 : 1;
}

static int run_perf() {
    const int N = 1 << 26;
    const int R = 5;  // timed calls, each on its own sub-range and output buffer
    std::vector<int> h = random_ints((size_t)N, -8, 8, 321 ^ g_bench_mix);
    int *din, *dout, *dwarm;
    CK(cudaMalloc(&din, (size_t)N * 4));
    CK(cudaMalloc(&dwarm, (size_t)N * 4));
    size_t stride = (size_t)N + kGuard;
    CK(cudaMalloc(&dout, stride * R * 4));
    CK(cudaMemcpy(din, h.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    poison(dout, stride * R);
    for (int w = 0; w < 3; ++w) inclusive_scan(din, dwarm, N);
    sync_check("warm-up");
    int offs[R], ns[R];
    for (int r = 0; r < R; ++r) { offs[r] = 4 * r; ns[r] = N - 4 * r - 3 * r; }
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) inclusive_scan(din + offs[r], dout + stride * r, ns[r]);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<int> got(stride);
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {
        CK(cudaMemcpy(got.data(), dout + stride * r, ((size_t)ns[r] + kGuard) * 4, cudaMemcpyDeviceToHost));
        ok = check("perf", h.data() + offs[r], got.data(), ns[r]);
    }
    CK(cudaFree(din)); CK(cudaFree(dout)); CK(cudaFree(dwarm));
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
