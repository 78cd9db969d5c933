// Hidden harness for jacobi_step (include/jacobi2d.h).
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "jacobi2d.h"

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
static int g_failures = 0;

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t g_rng = 0x6a09e667f3bcc908ull;
static uint64_t next_u64()
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float uniform01() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

static std::vector<float> make_grid(int nx, int ny)
{
    std::vector<float> g(static_cast<size_t>(nx) * ny);
    for (int r = 0; r < ny; ++r)
        for (int c = 0; c < nx; ++c) {
            float v = uniform01();
            if (r == 0) v = 1.0f;                      // a hot edge
            else if (c == nx - 1) v = 0.5f + 0.5f * v;  // a warm edge
            g[static_cast<size_t>(r) * nx + c] = v;
        }
    return g;
}

static void cpu_step(const std::vector<float>& in, std::vector<float>& out, int nx, int ny)
{
    for (int r = 0; r < ny; ++r)
        for (int c = 0; c < nx; ++c) {
            const size_t i = static_cast<size_t>(r) * nx + c;
            if (r == 0 || r == ny - 1 || c == 0 || c == nx - 1) out[i] = in[i];
            else out[i] = 0.25f * ((in[i - nx] + in[i + nx]) + (in[i - 1] + in[i + 1]));
        }
}

// Boundary cells are copies and must match bit for bit. Interior cells: values stay in [0, 1]
// and each step sums four floats and scales by 0.25 (exact), so a different summation order or
// FMA use changes a cell by a few ulps (< 1e-7); averaging never amplifies earlier differences,
// so 1e-5 absolute is a safe bound over the 10-20 steps used here, while any wrong neighbour or
// missed cell is off by far more.
static bool compare(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                    int nx, int ny)
{
    int bad = 0;
    for (int r = 0; r < ny; ++r)
        for (int c = 0; c < nx; ++c) {
            const size_t i = static_cast<size_t>(r) * nx + c;
            const bool edge = (r == 0 || r == ny - 1 || c == 0 || c == nx - 1);
            const bool ok = edge ? (memcmp(&got[i], &want[i], sizeof(float)) == 0)
                                 : (std::fabs(got[i] - want[i]) <= 1e-5f);
            if (!ok) {
                if (bad < 5)
                    fprintf(stderr, "FAIL %s (nx=%d ny=%d): cell (r=%d,c=%d) got %.9g want %.9g%s\n",
                            what, nx, ny, r, c, got[i], want[i], edge ? " [boundary]" : "");
                ++bad;
            }
        }
    if (bad) {
        fprintf(stderr, "FAIL %s (nx=%d ny=%d): %d wrong cells\n", what, nx, ny, bad);
        ++g_failures;
        return false;
    }
    return true;
}

static void run_case(int nx, int ny, int steps)
{
    const size_t cells = static_cast<size_t>(nx) * ny;
    const size_t bytes = cells * sizeof(float);
    std::vector<float> host = make_grid(nx, ny);
    float* d_a = nullptr;
    float* d_b = nullptr;
    if (cells) {
        CHECK_CUDA(cudaMalloc(&d_a, bytes));
        CHECK_CUDA(cudaMalloc(&d_b, bytes));
        CHECK_CUDA(cudaMemcpy(d_a, host.data(), bytes, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_b, 0xFF, bytes));  // NaN: cells never written are caught
    }
    std::vector<float> ref = host, tmp(cells);
    float* cur = d_a;
    float* nxt = d_b;
    for (int s = 0; s < steps; ++s) {
        jacobi_step(cur, nxt, nx, ny);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
        cpu_step(ref, tmp, nx, ny);
        ref.swap(tmp);
        float* t = cur; cur = nxt; nxt = t;
        if (s == 0 && cells) {  // check the first step on its own too
            std::vector<float> got(cells);
            CHECK_CUDA(cudaMemcpy(got.data(), cur, bytes, cudaMemcpyDeviceToHost));
            if (!compare("first step", got, ref, nx, ny)) break;
        }
    }
    if (cells) {
        std::vector<float> got(cells);
        CHECK_CUDA(cudaMemcpy(got.data(), cur, bytes, cudaMemcpyDeviceToHost));
        compare("after all steps", got, ref, nx, ny);
        CHECK_CUDA(cudaFree(d_a));
        CHECK_CUDA(cudaFree(d_b));
    }
}

static int run_perf()
{
    g_rng ^= g_bench_mix;  // this round's inputs (see bench_seed)
    const int nx = 8192, ny = 8192, steps = 10;
    const size_t cells = static_cast<size_t>(nx) * ny, bytes = cells * sizeof(float);
    std::vector<float> host = make_grid(nx, ny);
    float *d_a, *d_b;
    CHECK_CUDA(cudaMalloc(&d_a, bytes));
    CHECK_CUDA(cudaMalloc(&d_b, bytes));
    CHECK_CUDA(cudaMemcpy(d_a, host.data(), bytes, cudaMemcpyHostToDevice));
    for (int w = 0; w < 3; ++w) jacobi_step(d_a, d_b, nx, ny);  // warm-up
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemset(d_b, 0xFF, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());

    // Timed: `steps` chained steps; every step reads the previous step's output.
    float* cur = d_a;
    float* nxt = d_b;
    nvtxRangePushA("bench_region");
    for (int s = 0; s < steps; ++s) {
        jacobi_step(cur, nxt, nx, ny);
        float* t = cur; cur = nxt; nxt = t;
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
    CHECK_CUDA(cudaGetLastError());

    std::vector<float> ref = host, tmp(cells), got(cells);
    for (int s = 0; s < steps; ++s) { cpu_step(ref, tmp, nx, ny); ref.swap(tmp); }
    CHECK_CUDA(cudaMemcpy(got.data(), cur, bytes, cudaMemcpyDeviceToHost));
    compare("perf run", got, ref, nx, ny);
    CHECK_CUDA(cudaFree(d_a));
    CHECK_CUDA(cudaFree(d_b));
    return g_failures;
}

int main(int argc, char** argv)
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    g_bench_mix = bench_seed();

    const bool perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    if (perf) {
        if (run_perf()) { fprintf(stderr, "perf run: output check FAILED\n"); return 1; }
    } else {
        const int shapes[][3] = {{0, 0, 1},   {0, 5, 1},    {5, 0, 1},     {1, 1, 2},   {7, 1, 2},
                                 {1, 7, 2},   {2, 5, 2},    {5, 2, 2},     {3, 3, 3},   {4, 5, 4},
                                 {17, 33, 5}, {33, 17, 5},  {1000, 3, 3},  {3, 1000, 3},
                                 {257, 129, 20}, {1024, 768, 10}, {4099, 2051, 4}};
        for (const auto& s : shapes) run_case(s[0], s[1], s[2]);
        if (g_failures) { fprintf(stderr, "%d check(s) FAILED\n", g_failures); return 1; }
        printf("all jacobi_step checks passed\n");
    }
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
