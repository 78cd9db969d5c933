// stencil-jacobi2d's runner: calls the solution's jacobi_step in chains on the checker's grids
// and writes the grids out. It is built with the solution and decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs and compares every grid. Boilerplate (.npy files,
// the manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <utility>
#include <vector>
#include "cudaenv_runner.h"
#include "jacobi2d.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// Two buffers of nx * ny cells, each with `guard` poisoned floats after it; a holds the grid,
// b is poisoned (NaN), so a cell never written shows.
struct Grids {
    int ny, nx;
    size_t cells, guard;
    DeviceArray<float> a, b;
    explicit Grids(Case& c)
        : ny(static_cast<int>(c.shape("grid")[0])), nx(static_cast<int>(c.shape("grid")[1])),
          cells(static_cast<size_t>(nx) * ny), guard(c.scalar<int32_t>("guard")),
          a(cells + guard), b(cells + guard) {
        a.poison();
        b.poison();
        const std::vector<float> host = c.input<float>("grid");
        a.upload(host.data(), host.size());
    }
};

// A chain of `steps` steps ping-ponging the two buffers: the first step's output, the final
// grid (with its guard) and the other buffer's guard come back.
static void test_case(Case& c) {
    Grids g(c);
    const int steps = c.scalar<int32_t>("steps");
    float* cur = g.a.get();
    float* nxt = g.b.get();
    for (int s = 0; s < steps; ++s) {
        {
            cudaenv::Call call(g.cells > 0);  // on a GPU the grader checks that kernels ran in here
            jacobi_step(cur, nxt, g.nx, g.ny);
            cudaenv::sync("jacobi_step");
        }
        std::swap(cur, nxt);
        if (s == 0) c.output("first", g.b.download(g.cells));
    }
    const DeviceArray<float>& last = cur == g.a.get() ? g.a : g.b;
    const DeviceArray<float>& other = cur == g.a.get() ? g.b : g.a;
    c.output("final", last.download(g.cells + g.guard));
    c.output("other_guard", other.download(g.guard, g.cells));
}

// The benchmark: warm-up steps (a into b), b poisoned again, then `steps` chained steps inside
// bench_region; the last two timed steps' outputs (both buffers) and the guards come back.
static void perf_case(Case& c) {
    Grids g(c);
    const int steps = c.scalar<int32_t>("steps");
    for (int w = 0; w < 3; ++w) jacobi_step(g.a.get(), g.b.get(), g.nx, g.ny);
    cudaenv::sync("warm-up");
    g.b.poison();
    float* cur = g.a.get();
    float* nxt = g.b.get();
    {
        cudaenv::Range region("bench_region");
        for (int s = 0; s < steps; ++s) {
            jacobi_step(cur, nxt, g.nx, g.ny);
            std::swap(cur, nxt);
        }
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    const DeviceArray<float>& last = cur == g.a.get() ? g.a : g.b;
    const DeviceArray<float>& other = cur == g.a.get() ? g.b : g.a;
    c.output("final", last.download(g.cells + g.guard));
    c.output("previous", other.download(g.cells));
    c.output("other_guard", other.download(g.guard, g.cells));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
