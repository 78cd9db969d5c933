// Hidden harness for cub-device-scan.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "prefix_offsets.h"

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

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "CUDA error: %s -> %s (%s:%d)\n", #call,                 \
                    cudaGetErrorString(err_), __FILE__, __LINE__);                   \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

// Values in [0, maxval]; with maxval = 2^31 - 1 the sums overflow 32 bits almost at once.
static std::vector<int> make_input(int n, uint32_t maxval, uint32_t seed)
{
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) {
        uint32_t h = mix((uint32_t)i * 2654435761u ^ seed);
        v[i] = (int)(maxval == 0x7fffffffu ? (h & 0x7fffffffu) : h % (maxval + 1));
    }
    return v;
}

static bool compare(const long long* d_out, const std::vector<int>& in, const char* label)
{
    int n = (int)in.size();
    std::vector<long long> got(n + 1);
    CHECK(cudaMemcpy(got.data(), d_out, (n + 1) * sizeof(long long), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    long long acc = 0;
    for (int i = 0; i < n; ++i) {
        if (got[i] != acc && bad++ < 5) fprintf(stderr, "[%s] out[%d] = %lld, expected %lld\n", label, i, got[i], acc);
        acc += in[i];
    }
    if (bad) fprintf(stderr, "[%s] %zu wrong elements (n = %d)\n", label, bad, n);
    if (got[n] != -1LL) {
        fprintf(stderr, "[%s] wrote past the end of the output\n", label);
        return false;
    }
    return bad == 0;
}

static bool run_case(int n, uint32_t maxval, uint32_t seed, cudaStream_t s)
{
    char label[64];
    snprintf(label, sizeof label, "n=%d max=%u", n, maxval);
    std::vector<int> in = make_input(n, maxval, seed);
    int* d_in = nullptr;
    long long* d_out = nullptr;
    CHECK(cudaMalloc(&d_in, (n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_out, (n + 1) * sizeof(long long)));
    if (n) CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    const int big = 1000000000;
    CHECK(cudaMemcpy(d_in + n, &big, sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0xFF, (n + 1) * sizeof(long long)));  // every element reads as -1
    CHECK(cudaDeviceSynchronize());

    exclusive_offsets(d_in, d_out, n, s);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaDeviceSynchronize());
    bool ok = compare(d_out, in, label);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return ok;
}

static bool run_perf(cudaStream_t s)
{
    const int n = 1 << 25, warmup = 3, timed = 5;
    std::vector<std::vector<int>> in(timed);
    std::vector<int*> d_in(timed);
    std::vector<long long*> d_out(timed);
    for (int r = 0; r < timed; ++r) {
        in[r] = make_input(n, 1000u + 500u * r, (31u + r) ^ (uint32_t)g_bench_mix);
        CHECK(cudaMalloc(&d_in[r], n * sizeof(int)));
        CHECK(cudaMalloc(&d_out[r], (n + 1) * sizeof(long long)));
        CHECK(cudaMemcpy(d_in[r], in[r].data(), n * sizeof(int), cudaMemcpyHostToDevice));
    }
    for (int w = 0; w < warmup; ++w) exclusive_offsets(d_in[w % timed], d_out[0], n, s);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGetLastError());
    for (int r = 0; r < timed; ++r) CHECK(cudaMemset(d_out[r], 0xFF, (n + 1) * sizeof(long long)));
    CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) exclusive_offsets(d_in[r], d_out[r], n, s);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = compare(d_out[r], in[r], label) && ok;
        CHECK(cudaFree(d_in[r]));
        CHECK(cudaFree(d_out[r]));
    }
    return ok;
}

int main(int argc, char** argv)
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();

    bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bool ok = true;
    if (perf) {
        ok = run_perf(s);
    } else {
        const uint32_t kMax = 0x7fffffffu;
        ok = run_case(0, 10, 1, s) && ok;
        ok = run_case(1, 10, 2, s) && ok;
        ok = run_case(2, kMax, 3, s) && ok;
        ok = run_case(1000, 1000, 4, s) && ok;
        ok = run_case(1025, kMax, 5, s) && ok;
        ok = run_case(100003, 0, 6, s) && ok;              // all zeros
        ok = run_case((1 << 20) + 1, kMax, 7, s) && ok;
        ok = run_case(3000001, 1000, 8, s) && ok;
        ok = run_case((1 << 24) + 7, 300, 9, s) && ok;     // total exceeds 2^31
    }
    CHECK(cudaStreamDestroy(s));
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
