// The run-time compiled kernel must scale every element, and only the first n.
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "scale_rtc.h"

int main() {
    const int n = 10007, padded = n + 64;
    std::vector<float> x(padded), y(padded, -1.0f);
    for (int i = 0; i < padded; ++i) x[i] = 0.25f * (i % 97) - 3.0f;
    float *d_x = nullptr, *d_y = nullptr;
    cudaMalloc(&d_x, padded * sizeof(float));
    cudaMalloc(&d_y, padded * sizeof(float));
    cudaMemcpy(d_x, x.data(), padded * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_y, y.data(), padded * sizeof(float), cudaMemcpyHostToDevice);
    int rc = scale_rtc(1.5f, d_x, d_y, n);
    cudaMemcpy(y.data(), d_y, padded * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_y);
    if (rc != 0) {
        std::printf("FAIL: scale_rtc returned %d\n", rc);
        return 1;
    }
    for (int i = 0; i < padded; ++i) {
        float want = i < n ? 1.5f * x[i] : -1.0f;
        if (y[i] != want) {
            std::printf("FAIL: element %d got %g want %g\n", i, y[i], want);
            return 1;
        }
    }
    std::printf("PASS\n");
    return 0;
}
