// unified-memory's runner: calls the solution's forest_depths on the checker's forests (in
// ordinary pageable host vectors) and writes out what it returned, read on the host the
// moment the call returned, whether that buffer is managed memory, the input after the call
// and the error left pending. It is built with the solution and decides nothing:
// check/check.py, in a sandbox of its own, draws the forests and computes the depths itself.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "forest_depth.h"

using cudaenv::Case;

// What kind of memory `p` is (cudaMemoryTypeManaged is what the task asks for).
static cudaMemoryType kind_of(const int* p)
{
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        (void)cudaGetLastError();  // an unknown pointer: not managed
        return cudaMemoryTypeUnregistered;
    }
    return attr.type;
}

// The returned buffer as the host sees it now (no synchronisation first), if the host can
// read it at all; its kind goes to `managed`.
static std::vector<int32_t> read_now(const int* res, int n, int32_t& managed)
{
    std::vector<int32_t> seen;
    if (res == nullptr) return seen;
    const cudaMemoryType kind = kind_of(res);
    managed = kind == cudaMemoryTypeManaged;
    if (kind == cudaMemoryTypeManaged || kind == cudaMemoryTypeHost) seen.assign(res, res + n);
    return seen;
}

// The caller frees the result with cudaFree (a result it cannot free is the checker's to judge).
static void release(int* res)
{
    if (res && cudaFree(res) != cudaSuccess) (void)cudaGetLastError();
}

static void test_case(Case& c)
{
    const std::vector<int32_t> parent = c.input<int32_t>("parent");
    std::vector<int32_t> copy(parent);  // the call's input: a pageable host array
    const int n = (int)parent.size();
    int* res;
    int32_t managed = 0;
    std::vector<int32_t> seen;
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        res = forest_depths(copy.data(), n);
        seen = read_now(res, n, managed);
    }
    const cudaError_t pending = cudaGetLastError();
    c.output_scalar("is_null", (int32_t)(res == nullptr));
    c.output_scalar("managed", managed);
    c.output("depth", seen);
    c.output("parent_after", copy);
    c.output_scalar("pending", (int32_t)pending);
    cudaenv::sync("forest_depths");
    release(res);
}

// The benchmark: warm-up calls, then one timed call per forest inside bench_region; every
// result comes back.
static void perf_case(Case& c)
{
    const std::vector<int32_t> all = c.input<int32_t>("parent");  // timed rows of n
    const int timed = c.scalar<int32_t>("timed");
    const int n = (int)(all.size() / (size_t)timed);
    std::vector<std::vector<int32_t>> inputs;
    for (int r = 0; r < timed; ++r) inputs.emplace_back(all.begin() + (size_t)r * n, all.begin() + (size_t)(r + 1) * n);
    for (int w = 0; w < 3; ++w) {
        int* p = forest_depths(inputs[w % timed].data(), n);
        cudaenv::sync("warm-up");
        release(p);
    }
    std::vector<int*> res(timed, nullptr);
    {
        cudaenv::Range region("bench_region");
        for (int r = 0; r < timed; ++r) res[r] = forest_depths(inputs[r].data(), n);
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }
    cudaenv::sync("timed calls");
    for (int r = 0; r < timed; ++r) {
        int32_t managed = 0;
        c.output(cudaenv::Name("depth%d", r), read_now(res[r], n, managed));
        c.output_scalar(cudaenv::Name("managed%d", r), managed);
        release(res[r]);
    }
}

int main(int argc, char** argv)
{
    cudaSetDevice(0);  // an error here shows in the first case
    return cudaenv::run(argc, argv, test_case, perf_case);
}
