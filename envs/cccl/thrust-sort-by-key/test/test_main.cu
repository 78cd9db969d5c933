// Hidden harness for thrust-sort-by-key.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "cell_sort.h"

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

struct Input { std::vector<int> cell, id; };

// Cells drawn from [0, ncells) so that keys repeat; ids are arbitrary (repeats and negatives
// included), so only a stable sort reproduces the expected id order.
static Input make_input(int n, int ncells, uint32_t seed)
{
    Input in{std::vector<int>(n), std::vector<int>(n)};
    for (int i = 0; i < n; ++i) {
        in.cell[i] = (int)(mix((uint32_t)i * 2654435761u ^ seed) % (uint32_t)ncells);
        in.id[i] = (int)mix((uint32_t)i ^ (seed * 77u + 5u));
    }
    return in;
}

// Stable counting sort on the host (keys are bounded).
static Input cpu_sort(const Input& in)
{
    int n = (int)in.cell.size();
    int maxk = 0;
    for (int c : in.cell) maxk = c > maxk ? c : maxk;
    std::vector<int> start(maxk + 2, 0);
    for (int c : in.cell) start[c + 1]++;
    for (int k = 0; k <= maxk; ++k) start[k + 1] += start[k];
    Input out{std::vector<int>(n), std::vector<int>(n)};
    for (int i = 0; i < n; ++i) {
        int pos = start[in.cell[i]]++;
        out.cell[pos] = in.cell[i];
        out.id[pos] = in.id[i];
    }
    return out;
}

static bool compare(const int* d_cell, const int* d_id, const Input& want, const char* label)
{
    int n = (int)want.cell.size();
    std::vector<int> cell(n), id(n);
    if (n) {
        CHECK(cudaMemcpy(cell.data(), d_cell, n * sizeof(int), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(id.data(), d_id, n * sizeof(int), cudaMemcpyDeviceToHost));
    }
    size_t bad = 0;
    for (int i = 0; i < n; ++i) {
        if (cell[i] != want.cell[i] || id[i] != want.id[i]) {
            if (bad++ < 5) fprintf(stderr, "[%s] position %d: (%d, %d), expected (%d, %d)\n", label, i,
                                   cell[i], id[i], want.cell[i], want.id[i]);
        }
    }
    if (bad) fprintf(stderr, "[%s] %zu wrong positions (n = %d)\n", label, bad, n);
    return bad == 0;
}

static bool run_case(int n, int ncells, uint32_t seed)
{
    char label[64];
    snprintf(label, sizeof label, "n=%d cells=%d", n, ncells);
    Input in = make_input(n, ncells, seed);
    int *d_cell = nullptr, *d_id = nullptr;
    CHECK(cudaMalloc(&d_cell, (n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_id, (n + 1) * sizeof(int)));
    if (n) {
        CHECK(cudaMemcpy(d_cell, in.cell.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_id, in.id.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    }
    const int sentinel = -12345;
    CHECK(cudaMemcpy(d_cell + n, &sentinel, sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_id + n, &sentinel, sizeof(int), cudaMemcpyHostToDevice));

    CHECK(cudaDeviceSynchronize());  // uploads complete even if the solution uses its own stream
    sort_by_cell(d_cell, d_id, n);
    CHECK(cudaGetLastError());
    bool ok = compare(d_cell, d_id, cpu_sort(in), label);  // cudaMemcpy orders after default-stream work
    int s1 = 0, s2 = 0;
    CHECK(cudaMemcpy(&s1, d_cell + n, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&s2, d_id + n, sizeof(int), cudaMemcpyDeviceToHost));
    if (s1 != sentinel || s2 != sentinel) { fprintf(stderr, "[%s] wrote past the end\n", label); ok = false; }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d_cell));
    CHECK(cudaFree(d_id));
    return ok;
}

static bool run_perf()
{
    const int n = 1 << 22, ncells = 1 << 18, warmup = 3, timed = 5;
    std::vector<Input> in(timed);
    std::vector<int*> d_cell(timed), d_id(timed);
    for (int r = 0; r < timed; ++r) {
        in[r] = make_input(n, ncells, (4242u + r) ^ (uint32_t)g_bench_mix);
        CHECK(cudaMalloc(&d_cell[r], n * sizeof(int)));
        CHECK(cudaMalloc(&d_id[r], n * sizeof(int)));
    }
    for (int w = 0; w < warmup; ++w) {
        CHECK(cudaMemcpy(d_cell[0], in[w % timed].cell.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_id[0], in[w % timed].id.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaDeviceSynchronize());
        sort_by_cell(d_cell[0], d_id[0], n);
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    for (int r = 0; r < timed; ++r) {
        CHECK(cudaMemcpy(d_cell[r], in[r].cell.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_id[r], in[r].id.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    }
    CHECK(cudaDeviceSynchronize());

    nvtxRangePushA("bench_region");
    for (int r = 0; r < timed; ++r) sort_by_cell(d_cell[r], d_id[r], n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK(cudaGetLastError());

    bool ok = true;
    for (int r = 0; r < timed; ++r) {
        char label[32];
        snprintf(label, sizeof label, "perf call %d", r);
        ok = compare(d_cell[r], d_id[r], cpu_sort(in[r]), label) && ok;
        CHECK(cudaFree(d_cell[r]));
        CHECK(cudaFree(d_id[r]));
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
        ok = run_case(0, 1, 1) && ok;
        ok = run_case(1, 1, 2) && ok;
        ok = run_case(2, 2, 3) && ok;
        ok = run_case(1000, 1, 4) && ok;             // all keys equal: ids keep input order
        ok = run_case(4097, 16, 5) && ok;
        ok = run_case(100003, 100003, 6) && ok;
        ok = run_case(1000000, 1 << 24, 7) && ok;    // full key range
        ok = run_case(3000017, 5000, 8) && ok;
    }
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
