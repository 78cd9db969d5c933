// cublas-axpy-dot's runner: calls axpy_dot on the checker's cases and writes y, x (as the call
// left them), the returned dot and the handle's settings out. It decides nothing:
// check/check.py, in a sandbox of its own, draws the inputs and compares.
#include <cstdint>
#include <vector>
#include <cublas_v2.h>
#include "axpy_dot.h"
#include "cudaenv_runner.h"
#include "cudaenv_cublas.h"

using cudaenv::Case;
using cudaenv::DeviceArray;

// One call on the first n elements of x and y; both hold `guard` poisoned elements after them.
static void test_case(Case& c) {
    const int n = c.scalar<int32_t>("n");
    const float a = c.scalar<float>("a");
    cublasHandle_t h = cudaenv::cublas_handle();
    DeviceArray<float> x(c.input<float>("x")), y(c.input<float>("y"));
    cudaenv::check(cudaDeviceSynchronize(), "upload");
    c.output("settings_before", cudaenv::cublas_settings(h));
    float dot = -1.0f;
    {
        cudaenv::Call call(n > 0);  // on a GPU the grader checks that kernels ran in here
        dot = axpy_dot(h, n, a, x.get(), y.get());
    }
    cudaenv::check(cudaGetLastError(), "axpy_dot");
    // y must be final when the function returns: no synchronization of ours before the copy
    // (cudaMemcpy orders after the default stream's work)
    c.output("y", y.download(y.size()));
    c.output("x", x.download(x.size()));
    cudaenv::sync("axpy_dot");
    c.output_scalar("dot", dot);
    c.output("settings_after", cudaenv::cublas_settings(h));
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case); }
