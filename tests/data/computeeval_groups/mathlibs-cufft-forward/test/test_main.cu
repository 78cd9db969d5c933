// Compares the transform with a direct O(n^2) DFT computed in double precision.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "fft_forward.h"

int main() {
    const int n = 240;  // not a power of two: cuFFT's mixed-radix path
    std::vector<cufftComplex> in(n), out(n);
    for (int i = 0; i < n; ++i) {
        in[i].x = std::sin(0.37f * i) + 0.25f * (i % 7);
        in[i].y = std::cos(0.11f * i) - 0.5f;
    }
    cufftComplex* d = nullptr;
    if (cudaMalloc(&d, n * sizeof(cufftComplex)) != cudaSuccess) return 2;
    cudaMemcpy(d, in.data(), n * sizeof(cufftComplex), cudaMemcpyHostToDevice);
    fft_forward(d, n);
    cudaMemcpy(out.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost);
    cudaFree(d);
    const double pi = 3.14159265358979323846;
    double worst = 0.0, scale = 0.0;
    for (int k = 0; k < n; ++k) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < n; ++j) {
            double a = -2.0 * pi * (double)j * k / n;
            re += in[j].x * std::cos(a) - in[j].y * std::sin(a);
            im += in[j].x * std::sin(a) + in[j].y * std::cos(a);
        }
        worst = std::fmax(worst, std::hypot(out[k].x - re, out[k].y - im));
        scale = std::fmax(scale, std::hypot(re, im));
    }
    if (!(worst <= 1e-4 * (scale + 1.0))) {
        std::printf("FAIL: largest error %g (scale %g)\n", worst, scale);
        return 1;
    }
    std::printf("PASS\n");
    return 0;
}
