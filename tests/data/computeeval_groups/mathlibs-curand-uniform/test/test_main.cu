// Range, mean and reproducibility of the generated values.
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "fill_uniform.h"

static std::vector<float> draw(size_t n, unsigned long long seed) {
    std::vector<float> host(n, -1.0f);
    float* d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return host;
    cudaMemset(d, 0xff, n * sizeof(float));  // NaNs: a value never written stays out of range
    fill_uniform(d, n, seed);
    cudaMemcpy(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return host;
}

int main() {
    const size_t n = 1 << 20;
    std::vector<float> a = draw(n, 1234), b = draw(n, 1234), c = draw(n, 99);
    double sum = 0.0;
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!(a[i] > 0.0f && a[i] <= 1.0f)) {
            std::printf("FAIL: value %g at %zu is outside (0, 1]\n", a[i], i);
            return 1;
        }
        if (a[i] != b[i]) {
            std::printf("FAIL: the same seed gave different values at %zu\n", i);
            return 1;
        }
        differ += a[i] != c[i];
        sum += a[i];
    }
    double mean = sum / n;
    if (mean < 0.49 || mean > 0.51 || differ < n / 2) {
        std::printf("FAIL: mean %g, %zu of %zu differ between seeds\n", mean, differ, n);
        return 1;
    }
    std::printf("PASS\n");
    return 0;
}
