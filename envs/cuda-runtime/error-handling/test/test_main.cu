// Hidden harness for error-handling.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include "checked_launch.h"

static char g_token[160];

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "CUDA error: %s -> %s (%s:%d)\n", #call,                 \
                    cudaGetErrorString(err_), __FILE__, __LINE__);                   \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static const char* status_name(int s)
{
    static const char* names[] = {"LAUNCH_OK", "LAUNCH_NULL_POINTER", "LAUNCH_EMPTY_CONFIG",
                                  "LAUNCH_BLOCK_TOO_LARGE", "LAUNCH_GRID_TOO_LARGE", "LAUNCH_OTHER_ERROR"};
    return (s >= 0 && s <= 5) ? names[s] : "<invalid value>";
}

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

static float rnd(uint32_t i, uint32_t seed)
{
    return (float)(mix(i * 0x9E3779B9U ^ seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void noop_kernel() {}

static const int kCap = 1 << 21;  // capacity of the test buffers
static float *g_dx = nullptr, *g_dy = nullptr;
static std::vector<float> g_hx(kCap), g_hy(kCap);

// Runs one call and checks the status, the output, and that no error is left pending.
// `stale` first leaves an unrelated launch error pending, which must not change the result.
static bool run(const char* label, LaunchStatus expect, float a, int n, dim3 grid, dim3 block,
                bool null_x = false, bool null_y = false, bool stale = false)
{
    uint32_t seed = mix((uint32_t)n * 31u + grid.x * 7u + block.x * 3u + (uint32_t)expect);
    for (int i = 0; i < kCap; ++i) { g_hx[i] = rnd(i, seed); g_hy[i] = rnd(i, seed ^ 0xABCDu); }
    CHECK(cudaMemcpy(g_dx, g_hx.data(), kCap * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(g_dy, g_hy.data(), kCap * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());

    if (stale) {
        noop_kernel<<<1, 4096>>>();  // invalid: leaves cudaErrorInvalidConfiguration pending
        if (cudaPeekAtLastError() == cudaSuccess) {
            fprintf(stderr, "[%s] harness could not create a pending error\n", label);
            return false;
        }
    }
    LaunchStatus got = checked_axpy(a, null_x ? nullptr : g_dx, null_y ? nullptr : g_dy, n, grid, block);
    cudaError_t pending = cudaGetLastError();
    CHECK(cudaDeviceSynchronize());

    bool ok = true;
    if (got != expect) {
        fprintf(stderr, "[%s] returned %s, expected %s\n", label, status_name(got), status_name(expect));
        ok = false;
    }
    if (pending != cudaSuccess) {
        fprintf(stderr, "[%s] error left pending after return: %s\n", label, cudaGetErrorString(pending));
        ok = false;
    }
    std::vector<float> y(kCap);
    CHECK(cudaMemcpy(y.data(), g_dy, kCap * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int i = 0; i < kCap; ++i) {
        float want = (expect == LAUNCH_OK && i < n) ? a * g_hx[i] + g_hy[i] : g_hy[i];
        // One float FMA/mul+add of values in [-4, 4]: 1e-6 absolute covers the rounding
        // difference; a missed or doubled update changes y by ~|a*x| which is much larger
        // for all but a negligible fraction of elements.
        if (!(std::fabs(y[i] - want) <= 1e-6f)) {
            if (bad++ < 5) fprintf(stderr, "[%s] y[%d] = %.8g, expected %.8g\n", label, i, y[i], want);
        }
    }
    if (bad) { fprintf(stderr, "[%s] %zu wrong elements\n", label, bad); ok = false; }
    return ok;
}

int main()
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");

    CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaMalloc(&g_dx, kCap * sizeof(float)));
    CHECK(cudaMalloc(&g_dy, kCap * sizeof(float)));
    const unsigned mt = (unsigned)prop.maxThreadsPerBlock;
    const unsigned bz = (unsigned)prop.maxThreadsDim[2];
    const unsigned gy = (unsigned)prop.maxGridSize[1];
    const unsigned gz = (unsigned)prop.maxGridSize[2];

    bool ok = true;
    // Valid launches: results must be exact for every element, whatever the shape.
    ok = run("1-D exact fit", LAUNCH_OK, 2.5f, 1024, dim3(4), dim3(256)) && ok;
    ok = run("1-D ragged", LAUNCH_OK, -1.25f, 1000, dim3(4), dim3(256)) && ok;
    ok = run("grid smaller than n", LAUNCH_OK, 0.5f, 100003, dim3(3), dim3(128)) && ok;
    ok = run("3-D grid and block", LAUNCH_OK, 3.0f, 100003, dim3(3, 2, 2), dim3(8, 4, 2)) && ok;
    ok = run("3-D large n", LAUNCH_OK, -2.0f, kCap - 5, dim3(7, 5, 3), dim3(16, 4, 4)) && ok;
    ok = run("max block", LAUNCH_OK, 1.5f, 77777, dim3(2), dim3(mt)) && ok;
    ok = run("max block z", LAUNCH_OK, 1.75f, 777, dim3(1), dim3(1, 1, bz)) && ok;
    ok = run("more threads than n", LAUNCH_OK, 4.0f, 5, dim3(64), dim3(256)) && ok;
    ok = run("single element", LAUNCH_OK, -3.5f, 1, dim3(1), dim3(1)) && ok;
    ok = run("n = 0", LAUNCH_OK, 2.0f, 0, dim3(8), dim3(128)) && ok;
    ok = run("n = 0 with null pointers", LAUNCH_OK, 2.0f, 0, dim3(8), dim3(128), true, true) && ok;
    ok = run("stale error before valid launch", LAUNCH_OK, 1.25f, 50000, dim3(16), dim3(256), false, false, true) && ok;
    // Null pointers.
    ok = run("null x", LAUNCH_NULL_POINTER, 2.0f, 100, dim3(1), dim3(128), true, false) && ok;
    ok = run("null y", LAUNCH_NULL_POINTER, 2.0f, 100, dim3(1), dim3(128), false, true) && ok;
    ok = run("null beats empty grid", LAUNCH_NULL_POINTER, 2.0f, 100, dim3(0), dim3(128), true, true) && ok;
    // Empty configurations.
    ok = run("grid.x = 0", LAUNCH_EMPTY_CONFIG, 2.0f, 100, dim3(0), dim3(128)) && ok;
    ok = run("grid.z = 0", LAUNCH_EMPTY_CONFIG, 2.0f, 100, dim3(1, 1, 0), dim3(128)) && ok;
    ok = run("block.y = 0", LAUNCH_EMPTY_CONFIG, 2.0f, 100, dim3(2), dim3(32, 0, 1)) && ok;
    ok = run("n = 0 and empty grid", LAUNCH_EMPTY_CONFIG, 2.0f, 0, dim3(0), dim3(32)) && ok;
    ok = run("empty beats oversized block", LAUNCH_EMPTY_CONFIG, 2.0f, 100, dim3(0), dim3(mt * 2)) && ok;
    ok = run("stale error before empty grid", LAUNCH_EMPTY_CONFIG, 2.0f, 100, dim3(0), dim3(64), false, false, true) && ok;
    // Oversized blocks.
    ok = run("block.x too large", LAUNCH_BLOCK_TOO_LARGE, 2.0f, 100, dim3(1), dim3(mt + 1)) && ok;
    ok = run("block product too large", LAUNCH_BLOCK_TOO_LARGE, 2.0f, 100, dim3(1), dim3(32, 32, 2)) && ok;
    ok = run("block.z too large", LAUNCH_BLOCK_TOO_LARGE, 2.0f, 100, dim3(1), dim3(1, 1, bz + 1)) && ok;
    ok = run("block beats grid", LAUNCH_BLOCK_TOO_LARGE, 2.0f, 100, dim3(1, gy + 1), dim3(mt * 2)) && ok;
    // Oversized grids.
    ok = run("grid.y too large", LAUNCH_GRID_TOO_LARGE, 2.0f, 100, dim3(1, gy + 1, 1), dim3(32)) && ok;
    ok = run("grid.z too large", LAUNCH_GRID_TOO_LARGE, 2.0f, 100, dim3(1, 1, gz + 1), dim3(32)) && ok;
    ok = run("stale error before large grid", LAUNCH_GRID_TOO_LARGE, 2.0f, 100, dim3(1, gy + 1, 1), dim3(32), false, false, true) && ok;
    // A valid call after all the failures still works.
    ok = run("valid after failures", LAUNCH_OK, 0.75f, 123457, dim3(100), dim3(96)) && ok;

    CHECK(cudaFree(g_dx));
    CHECK(cudaFree(g_dy));
    if (!ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
