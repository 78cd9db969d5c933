// error-handling's runner: calls the solution's checked_axpy on the checker's cases and writes
// out what it returned and the process state after it (the error left pending, the result of
// a device synchronize, y). It is built with the solution and decides nothing: check/check.py,
// in a sandbox of its own, draws the inputs, knows each case's status and compares.
#include <cstdint>
#include <vector>
#include "checked_launch.h"
#include "cudaenv_runner.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

__global__ void noop_kernel() {}

static dim3 shape(Case& c, const char* name)
{
    const std::vector<uint32_t> d = c.input<uint32_t>(name);
    if (d.size() != 3) throw cudaenv::CaseError("input %s needs 3 components", name);
    return dim3(d[0], d[1], d[2]);
}

// Whether this device can launch (grid, block): only then does a call with work launch kernels.
static bool launchable(dim3 grid, dim3 block)
{
    static const cudaDeviceProp p = [] {
        cudaDeviceProp q;
        cudaenv::check(cudaGetDeviceProperties(&q, 0), "cudaGetDeviceProperties");
        return q;
    }();
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    const unsigned b[3] = {block.x, block.y, block.z}, g[3] = {grid.x, grid.y, grid.z};
    for (int k = 0; k < 3; ++k)
        if (b[k] == 0 || g[k] == 0 || b[k] > (unsigned)p.maxThreadsDim[k] || g[k] > (unsigned)p.maxGridSize[k])
            return false;
    return threads <= (unsigned long long)p.maxThreadsPerBlock;
}

// One call on fresh x and y (n elements plus a tail the call must leave alone). With `stale`,
// an unrelated launch error is left pending first; it must not change the result.
static void test_case(Case& c)
{
    const int n = c.scalar<int32_t>("n");
    const float a = c.scalar<float>("a");
    const dim3 grid = shape(c, "grid"), block = shape(c, "block");
    const bool null_x = c.scalar<int32_t>("null_x") != 0, null_y = c.scalar<int32_t>("null_y") != 0;
    const bool stale = c.scalar<int32_t>("stale") != 0;
    DeviceArray<float> x(c.input<float>("x")), y(c.input<float>("y"));
    cudaenv::sync("setup");  // uploads done, no error pending
    int32_t stale_pending = 0;
    if (stale) {
        noop_kernel<<<1, 4096>>>();  // invalid: leaves cudaErrorInvalidConfiguration pending
        stale_pending = cudaPeekAtLastError() != cudaSuccess;
    }
    LaunchStatus got;
    cudaError_t pending, synced;
    {
        cudaenv::Call call(n > 0 && !null_x && !null_y && launchable(grid, block));
        got = checked_axpy(a, null_x ? nullptr : x.get(), null_y ? nullptr : y.get(), n, grid, block);
        pending = cudaGetLastError();  // what the call left pending
        synced = cudaDeviceSynchronize();
    }
    c.output_scalar("status", (int32_t)got);
    c.output_scalar("pending", (int32_t)pending);
    c.output_scalar("sync", (int32_t)synced);
    c.output_scalar("stale_pending", stale_pending);
    c.output("y", y.download(y.size()));
}

int main(int argc, char** argv)
{
    cudaSetDevice(0);  // an error here shows in the first case
    return cudaenv::run(argc, argv, test_case);
}
