// relu over a 2x3x5x7 tensor of mixed signs, checked element by element.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "relu_forward.h"

int main() {
    const int64_t n = 2, c = 3, h = 5, w = 7, count = n * c * h * w;
    std::vector<float> x(count), y(count, 123.0f);
    for (int64_t i = 0; i < count; ++i) x[i] = std::sin(0.9f * i) * (1 + i % 4);
    float *d_x = nullptr, *d_y = nullptr;
    cudaMalloc(&d_x, count * sizeof(float));
    cudaMalloc(&d_y, count * sizeof(float));
    cudaMemcpy(d_x, x.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_y, y.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudnnHandle_t handle;
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
        std::printf("FAIL: cudnnCreate\n");
        return 2;
    }
    int rc = relu_forward(handle, n, c, h, w, d_x, d_y);
    cudaMemcpy(y.data(), d_y, count * sizeof(float), cudaMemcpyDeviceToHost);
    cudnnDestroy(handle);
    cudaFree(d_x);
    cudaFree(d_y);
    if (rc != 0) {
        std::printf("FAIL: relu_forward returned %d\n", rc);
        return 1;
    }
    for (int64_t i = 0; i < count; ++i) {
        float want = x[i] > 0.0f ? x[i] : 0.0f;
        if (std::fabs(y[i] - want) > 1e-6f) {
            std::printf("FAIL: element %lld got %g want %g\n", (long long)i, y[i], want);
            return 1;
        }
    }
    std::printf("PASS\n");
    return 0;
}
