// Hidden harness for unified-memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdint>
#include <vector>
#include <random>
#include <algorithm>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "forest_depth.h"

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

static std::vector<int> permutation(int n, std::mt19937& g)
{
    std::vector<int> p(n);
    for (int i = 0; i < n; ++i) p[i] = i;
    std::shuffle(p.begin(), p.end(), g);
    return p;
}

// Disjoint chains with random lengths in [1, maxlen], node labels scrambled.
static std::vector<int> gen_chains(int n, int maxlen, uint32_t seed)
{
    std::mt19937 g(seed);
    std::vector<int> perm = permutation(n, g), parent(n);
    int k = 0;
    while (k < n) {
        int len = std::min(n - k, 1 + (int)(g() % (uint32_t)maxlen));
        parent[perm[k]] = perm[k];
        for (int t = 1; t < len; ++t) parent[perm[k + t]] = perm[k + t - 1];
        k += len;
    }
    return parent;
}

// Random recursive forest: the node at position k attaches to a random earlier node.
static std::vector<int> gen_recursive(int n, double root_prob, uint32_t seed)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<int> perm = permutation(n, g), parent(n);
    for (int k = 0; k < n; ++k) {
        if (k == 0 || u(g) < root_prob) parent[perm[k]] = perm[k];
        else parent[perm[k]] = perm[g() % (uint32_t)k];
    }
    return parent;
}

static std::vector<int> cpu_depths(const std::vector<int>& parent)
{
    int n = (int)parent.size();
    std::vector<int> d(n, -1), stack;
    for (int i = 0; i < n; ++i) {
        int j = i;
        while (d[j] < 0 && parent[j] != j) { stack.push_back(j); j = parent[j]; }
        if (d[j] < 0) d[j] = 0;
        int base = d[j];
        while (!stack.empty()) { d[stack.back()] = ++base; stack.pop_back(); }
    }
    return d;
}

// Reads the returned buffer on the host right away (no synchronisation first).
static bool check_result(int* res, const std::vector<int>& parent, const char* label)
{
    int n = (int)parent.size();
    if (n == 0) {
        if (res != nullptr) { fprintf(stderr, "[%s] expected nullptr for n == 0\n", label); return false; }
        return true;
    }
    if (res == nullptr) { fprintf(stderr, "[%s] returned nullptr\n", label); return false; }
    std::vector<int> want = cpu_depths(parent);
    size_t bad = 0;
    for (int i = 0; i < n; ++i) {
        if (res[i] != want[i] && bad++ < 5)
            fprintf(stderr, "[%s] depth[%d] = %d, expected %d\n", label, i, res[i], want[i]);
    }
    if (bad) fprintf(stderr, "[%s] %zu wrong depths\n", label, bad);
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, res));
    if (attr.type != cudaMemoryTypeManaged) {
        fprintf(stderr, "[%s] result was not allocated with cudaMallocManaged\n", label);
        return false;
    }
    return bad == 0;
}

static bool run_case(const std::vector<int>& parent, const char* label)
{
    std::vector<int> copy(parent);
    int* res = forest_depths(copy.data(), (int)copy.size());
    CHECK(cudaGetLastError());
    bool ok = check_result(res, parent, label);
    if (copy != parent) { fprintf(stderr, "[%s] input was modified\n", label); ok = false; }
    CHECK(cudaDeviceSynchronize());
    if (res) CHECK(cudaFree(res));
    return ok;
}

static bool run_perf()
{
    const int n = 1 << 22, warmup = 3, timed = 5;
    std::vector<std::vector<int>> inputs(timed);
    for (int r = 0; r < timed; ++r) inputs[r] = gen_chains(n, 512, (5000u + r) ^ (uint32_t)g_bench_mix);
    for (int w = 0; w < warmup; ++w) {
        int* p = forest_depths(inputs[w % timed].data(), n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(p));
    }
    CHECK(cudaGetLastError());
    std::vector<int*> res(timed, nullptr);

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) res[r] = forest_depths(inputs[r].data(), n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = check_result(res[r], inputs[r], label) && ok;
        if (res[r]) CHECK(cudaFree(res[r]));
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
    int managed = 0;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    if (!managed) { fprintf(stderr, "device does not support managed memory\n"); return 1; }
    bool ok = true;
    if (perf) {
        ok = run_perf();
    } else {
        ok = run_case({}, "empty") && ok;
        ok = run_case({0}, "single root") && ok;
        ok = run_case({1, 1}, "two nodes") && ok;
        ok = run_case(std::vector<int>(70000, 0), "star") && ok;
        ok = run_case(gen_chains(20000, 20000, 11), "one long chain") && ok;
        ok = run_case(gen_chains(300007, 64, 12), "short chains") && ok;
        ok = run_case(gen_recursive(1000003, 0.001, 13), "random forest") && ok;
        ok = run_case(gen_chains(1 << 21, 700, 14), "long chains") && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
