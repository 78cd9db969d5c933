#include <cmath>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "axpy.h"

int main() {
    const int n = 4096;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) { x[i] = 0.5f * (i % 7); y[i] = 1.0f - (i % 3); }
    float *dx = nullptr, *dy = nullptr;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    scale_add(n, 3.0f, dx, dy);
    std::vector<float> out(n);
    cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        if (std::fabs(out[i] - (3.0f * x[i] + y[i])) > 1e-5f) {
            std::fprintf(stderr, "mismatch at %d\n", i);
            return 1;
        }
    }
    std::puts("ok");
    return 0;
}
