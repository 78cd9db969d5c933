// Hidden harness for thrust-unique-count.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <climits>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "distinct_count.h"

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

// `pool` distinct candidate values spread over the whole int range (negative ones included);
// each element picks one of them at random.
static std::vector<int> make_input(int n, uint32_t pool, uint32_t seed)
{
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) {
        uint32_t k = mix((uint32_t)i * 2654435761u ^ seed) % pool;
        v[i] = (int)mix(k * 0x9E3779B9u + seed);  // bijective in k: distinct k -> distinct values
    }
    return v;
}

static int cpu_distinct(std::vector<int> v)
{
    std::sort(v.begin(), v.end());
    return (int)(std::unique(v.begin(), v.end()) - v.begin());
}

static int* upload(const std::vector<int>& v)
{
    int n = (int)v.size();
    int* d = nullptr;
    CHECK(cudaMalloc(&d, (n + 1) * sizeof(int)));
    if (n) CHECK(cudaMemcpy(d, v.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    const int sentinel = INT_MIN + 12345;  // a value that never occurs in the first n elements
    CHECK(cudaMemcpy(d + n, &sentinel, sizeof(int), cudaMemcpyHostToDevice));
    return d;
}

static bool unchanged(const int* d, const std::vector<int>& v, const char* label)
{
    int n = (int)v.size();
    std::vector<int> back(n);
    if (n) CHECK(cudaMemcpy(back.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    if (back != v) { fprintf(stderr, "[%s] input array was modified\n", label); return false; }
    return true;
}

static bool run_case(const std::vector<int>& v, const char* label)
{
    int* d = upload(v);
    CHECK(cudaDeviceSynchronize());  // uploads complete even if the solution uses its own stream
    int got = count_distinct(d, (int)v.size());
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int want = cpu_distinct(v);
    bool ok = true;
    if (got != want) { fprintf(stderr, "[%s] returned %d, expected %d\n", label, got, want); ok = false; }
    ok = unchanged(d, v, label) && ok;
    CHECK(cudaFree(d));
    return ok;
}

static bool run_perf()
{
    const int n = 1 << 23, warmup = 3, timed = 5;
    std::vector<std::vector<int>> in(timed);
    std::vector<int*> d(timed);
    for (int r = 0; r < timed; ++r) {
        in[r] = make_input(n, (uint32_t)n / (uint32_t)(r + 2), (300u + r) ^ (uint32_t)g_bench_mix);
        d[r] = upload(in[r]);
    }
    CHECK(cudaDeviceSynchronize());
    for (int w = 0; w < warmup; ++w) (void)count_distinct(d[w], n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    std::vector<int> got(timed, -1);

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) got[r] = count_distinct(d[r], n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        int want = cpu_distinct(in[r]);
        if (got[r] != want) { fprintf(stderr, "[%s] returned %d, expected %d\n", label, got[r], want); ok = false; }
        ok = unchanged(d[r], in[r], label) && ok;
        CHECK(cudaFree(d[r]));
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
    bool ok = true;
    if (perf) {
        ok = run_perf();
    } else {
        ok = run_case({}, "empty") && ok;
        ok = run_case({42}, "single") && ok;
        ok = run_case({7, 7}, "pair equal") && ok;
        ok = run_case({INT_MIN, INT_MAX, 0, -1, INT_MIN}, "extremes") && ok;
        ok = run_case(std::vector<int>(100000, -5), "all equal") && ok;
        std::vector<int> desc(70001);
        for (int i = 0; i < 70001; ++i) desc[i] = 70000 - i;
        ok = run_case(desc, "all distinct, descending") && ok;
        ok = run_case(make_input(4099, 17, 1), "few distinct") && ok;
        ok = run_case(make_input(1000003, 500000, 2), "half distinct") && ok;
        ok = run_case(make_input(3000001, 4000000000u, 3), "mostly distinct") && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
