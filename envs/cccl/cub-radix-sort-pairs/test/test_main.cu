// Hidden harness for cub-radix-sort-pairs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <numeric>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "rank_scores.h"

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

struct Pairs { std::vector<float> score; std::vector<int> id; };

// Scores are multiples of 1/64 in [-levels/64, levels/64] (many ties, negative values
// included; +0.0 only), ids are arbitrary.
static Pairs make_input(int n, int levels, uint32_t seed)
{
    Pairs p{std::vector<float>(n), std::vector<int>(n)};
    for (int i = 0; i < n; ++i) {
        int q = (int)(mix((uint32_t)i * 2654435761u ^ seed) % (uint32_t)(2 * levels + 1)) - levels;
        p.score[i] = (float)q / 64.0f;  // q == 0 gives +0.0f
        p.id[i] = (int)mix((uint32_t)i + seed * 31u);
    }
    return p;
}

static Pairs cpu_rank(const Pairs& in)
{
    int n = (int)in.score.size();
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return in.score[a] > in.score[b]; });
    Pairs out{std::vector<float>(n), std::vector<int>(n)};
    for (int i = 0; i < n; ++i) { out.score[i] = in.score[order[i]]; out.id[i] = in.id[order[i]]; }
    return out;
}

struct DevPairs {
    float *s_in, *s_out;
    int *id_in, *id_out;
};

static DevPairs upload(const Pairs& p)
{
    int n = (int)p.score.size();
    DevPairs d;
    CHECK(cudaMalloc(&d.s_in, (n + 1) * sizeof(float)));
    CHECK(cudaMalloc(&d.s_out, (n + 1) * sizeof(float)));
    CHECK(cudaMalloc(&d.id_in, (n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d.id_out, (n + 1) * sizeof(int)));
    if (n) {
        CHECK(cudaMemcpy(d.s_in, p.score.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d.id_in, p.id.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    }
    // Sentinels past the end of every array (0x7F7F7F7F: a large float / int).
    CHECK(cudaMemset(d.s_in + n, 0x7F, sizeof(float)));
    CHECK(cudaMemset(d.id_in + n, 0x7F, sizeof(int)));
    CHECK(cudaMemset(d.s_out, 0x7F, (n + 1) * sizeof(float)));
    CHECK(cudaMemset(d.id_out, 0x7F, (n + 1) * sizeof(int)));
    return d;
}

static void release(DevPairs& d)
{
    CHECK(cudaFree(d.s_in)); CHECK(cudaFree(d.s_out)); CHECK(cudaFree(d.id_in)); CHECK(cudaFree(d.id_out));
}

static bool verify(const DevPairs& d, const Pairs& in, const char* label)
{
    int n = (int)in.score.size();
    Pairs want = cpu_rank(in);
    std::vector<float> s_out(n + 1), s_in(n + 1);
    std::vector<int> id_out(n + 1), id_in(n + 1);
    CHECK(cudaMemcpy(s_out.data(), d.s_out, (n + 1) * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(id_out.data(), d.id_out, (n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(s_in.data(), d.s_in, (n + 1) * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(id_in.data(), d.id_in, (n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int i = 0; i < n; ++i) {
        if (memcmp(&s_out[i], &want.score[i], sizeof(float)) != 0 || id_out[i] != want.id[i]) {
            if (bad++ < 5) fprintf(stderr, "[%s] rank %d: (%g, %d), expected (%g, %d)\n", label, i, s_out[i],
                                   id_out[i], want.score[i], want.id[i]);
        }
    }
    if (bad) fprintf(stderr, "[%s] %zu wrong ranks (n = %d)\n", label, bad, n);
    bool ok = bad == 0;
    if (n && (memcmp(s_in.data(), in.score.data(), n * sizeof(float)) != 0 ||
              memcmp(id_in.data(), in.id.data(), n * sizeof(int)) != 0)) {
        fprintf(stderr, "[%s] input arrays were modified\n", label);
        ok = false;
    }
    const int sentinel = 0x7F7F7F7F;
    int so, io;
    memcpy(&so, &s_out[n], sizeof so);
    io = id_out[n];
    if (so != sentinel || io != sentinel) { fprintf(stderr, "[%s] wrote past the end of an output\n", label); ok = false; }
    return ok;
}

static bool run_case(int n, int levels, uint32_t seed)
{
    char label[64];
    snprintf(label, sizeof label, "n=%d levels=%d", n, levels);
    Pairs in = make_input(n, levels, seed);
    DevPairs d = upload(in);
    CHECK(cudaDeviceSynchronize());
    rank_scores(d.s_in, d.id_in, d.s_out, d.id_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    bool ok = verify(d, in, label);
    release(d);
    return ok;
}

static bool run_perf()
{
    const int n = 1 << 22, warmup = 3, timed = 5;
    std::vector<Pairs> in(timed);
    std::vector<DevPairs> d(timed);
    for (int r = 0; r < timed; ++r) {
        in[r] = make_input(n, 6400 * (r + 1), (99u + r) ^ (uint32_t)g_bench_mix);
        d[r] = upload(in[r]);
    }
    CHECK(cudaDeviceSynchronize());
    for (int w = 0; w < warmup; ++w) rank_scores(d[w].s_in, d[w].id_in, d[w].s_out, d[w].id_out, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    for (int r = 0; r < timed; ++r) {
        CHECK(cudaMemset(d[r].s_out, 0x7F, (n + 1) * sizeof(float)));
        CHECK(cudaMemset(d[r].id_out, 0x7F, (n + 1) * sizeof(int)));
    }
    CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) rank_scores(d[r].s_in, d[r].id_in, d[r].s_out, d[r].id_out, n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = verify(d[r], in[r], label) && ok;
        release(d[r]);
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
        ok = run_case(0, 10, 1) && ok;
        ok = run_case(1, 10, 2) && ok;
        ok = run_case(2, 10, 3) && ok;
        ok = run_case(1000, 0, 4) && ok;          // all scores equal (+0.0): order unchanged
        ok = run_case(4097, 3, 5) && ok;          // few distinct scores, many ties
        ok = run_case(100003, 6400, 6) && ok;     // scores in [-100, 100]
        ok = run_case(1000000, 1 << 20, 7) && ok;
        ok = run_case(3000017, 50, 8) && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
