// Hidden harness for histogram-256: 256-bin byte histogram.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "histogram.h"

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

static const int kSlot = 256 + 64;            // 256 bins followed by 64 guard words
static const unsigned kPoison = 0xA5A5A5A5u;  // fill value of bins and guard before each call

static void poison(unsigned* d, size_t count) {
    std::vector<unsigned> h(count, kPoison);
    CK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
}

static void cpu_hist(const unsigned char* p, size_t n, uint64_t* h) {
    for (size_t i = 0; i < n; ++i) h[p[i]]++;
}

// got: kSlot words read back from the device; counts must match exactly, guard untouched.
static bool check(const char* name, const uint64_t* ref, const unsigned* got, size_t n) {
    for (int b = 0; b < 256; ++b)
        if ((uint64_t)got[b] != ref[b]) {
            fprintf(stderr, "FAIL %s: bins[%d] = %u, expected %llu (n=%zu)\n", name, b, got[b],
                    (unsigned long long)ref[b], n);
            return false;
        }
    for (int b = 256; b < kSlot; ++b)
        if (got[b] != kPoison) {
            fprintf(stderr, "FAIL %s: wrote past bins[255] (word %d)\n", name, b);
            return false;
        }
    return true;
}

// Histogram of h (placed at byte offset off inside the device buffer).
static bool run_case(const char* name, const std::vector<unsigned char>& h, size_t off) {
    size_t n = h.size();
    unsigned char* dd;
    unsigned* db;
    CK(cudaMalloc(&dd, n + off + 16));
    CK(cudaMemset(dd, 0x3C, n + off + 16));
    if (n) CK(cudaMemcpy(dd + off, h.data(), n, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&db, kSlot * 4));
    poison(db, kSlot);
    histogram256(dd + off, n, db);
    sync_check(name);
    unsigned got[kSlot];
    CK(cudaMemcpy(got, db, sizeof got, cudaMemcpyDeviceToHost));
    uint64_t ref[256] = {0};
    cpu_hist(h.data(), n, ref);
    bool ok = check(name, ref, got, n);
    CK(cudaFree(dd)); CK(cudaFree(db));
    if (ok) printf("ok   %s (n=%zu, offset=%zu)\n", name, n, off);
    return ok;
}

static std::vector<unsigned char> random_bytes(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<unsigned char> h(n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { uint64_t r = rng.next(); memcpy(&h[i], &r, 8); }
    for (; i < n; ++i) h[i] = (unsigned char)rng.next();
    return h;
}

// Roughly text-like: mostly lower-case letters and spaces, some digits, a few of anything.
static std::vector<unsigned char> text_like(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<unsigned char> h(n);
    for (size_t i = 0; i < n; ++i) {
        uint64_t r = rng.next();
        unsigned sel = (unsigned)(r % 100);
        if (sel < 16) h[i] = ' ';
        else if (sel < 84) h[i] = (unsigned char)('a' + (r >> 8) % 26);
        else if (sel < 95) h[i] = (unsigned char)('0' + (r >> 16) % 10);
        else h[i] = (unsigned char)(r >> 24);
    }
    return h;
}

static int run_tests() {
    bool ok = true;
    ok &= run_case("empty", {}, 0);
    ok &= run_case("single", {200}, 0);
    const size_t sizes[] = {15, 16, 17, 255, 256, 257, 1000, 4099, 65539, 1 << 20, 10000007};
    for (size_t n : sizes) {
        char name[64];
        snprintf(name, sizeof name, "random-%zu", n);
        ok &= run_case(name, random_bytes(n, 40 + n), 0);
    }
    for (size_t off : {1, 3, 7, 15}) ok &= run_case("misaligned", random_bytes(100003, 90 + off), off);
    ok &= run_case("misaligned-short", random_bytes(9, 3), 5);
    ok &= run_case("one-value", std::vector<unsigned char>(5000011, 'A'), 0);
    ok &= run_case("all-0xff", std::vector<unsigned char>(70001, 0xFF), 2);
    {
        std::vector<unsigned char> h(256 * 1000 + 17);
        for (size_t i = 0; i < h.size(); ++i) h[i] = (unsigned char)(i * 7);
        ok &= run_case("cycle", h, 0);
    }
    ok &= run_case("text-like", text_like(20000003, 5), 1);
    ok &= run_case("huge", random_bytes(((size_t)1 << 28) + 3, 6), 0);
    return ok ? 0 : 1;
}

static int run_perf() {
    const size_t N = (size_t)1 << 28;
    const int R = 8;  // timed calls, each on its own sub-range and output slot
    std::vector<unsigned char> h = text_like(N, 1234 ^ g_bench_mix);
    unsigned char* dd;
    unsigned *db, *dwarm;
    CK(cudaMalloc(&dd, N));
    CK(cudaMalloc(&db, (size_t)kSlot * R * 4));
    CK(cudaMalloc(&dwarm, kSlot * 4));
    CK(cudaMemcpy(dd, h.data(), N, cudaMemcpyHostToDevice));
    poison(db, (size_t)kSlot * R);
    for (int w = 0; w < 3; ++w) histogram256(dd, N, dwarm);
    sync_check("warm-up");
    size_t offs[R], ns[R];
    for (int r = 0; r < R; ++r) { offs[r] = 16 * (size_t)r; ns[r] = N - 17 * (size_t)r; }
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) histogram256(dd + offs[r], ns[r], db + (size_t)kSlot * r);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    std::vector<unsigned> got((size_t)kSlot * R);
    CK(cudaMemcpy(got.data(), db, got.size() * 4, cudaMemcpyDeviceToHost));
    uint64_t full[256] = {0};
    cpu_hist(h.data(), N, full);
    bool ok = true;
    for (int r = 0; r < R; ++r) {
        uint64_t ref[256];
        memcpy(ref, full, sizeof ref);
        for (size_t i = 0; i < offs[r]; ++i) ref[h[i]]--;
        for (size_t i = offs[r] + ns[r]; i < N; ++i) ref[h[i]]--;
        ok &= check("perf", ref, got.data() + (size_t)kSlot * r, ns[r]);
    }
    CK(cudaFree(dd)); CK(cudaFree(db)); CK(cudaFree(dwarm));
    if (ok) printf("ok   perf (%d timed calls, n=%zu)\n", R, N);
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
