// A = M^T M + n I (SPD); the residual |A x - b| must be small relative to |A||x| + |b|.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "cholesky_solve.h"

int main() {
    const int n = 96;
    std::vector<double> m(n * n);
    for (int i = 0; i < n * n; ++i) m[i] = std::sin(0.7 * i) * 0.5;
    std::vector<float> a(n * n), b(n);
    for (int c = 0; c < n; ++c)
        for (int r = 0; r < n; ++r) {
            double s = r == c ? n : 0.0;
            for (int k = 0; k < n; ++k) s += m[k * n + r] * m[k * n + c];
            a[c * n + r] = (float)s;
        }
    for (int i = 0; i < n; ++i) b[i] = (float)std::cos(0.2 * i);
    float *d_a = nullptr, *d_b = nullptr;
    cudaMalloc(&d_a, sizeof(float) * n * n);
    cudaMalloc(&d_b, sizeof(float) * n);
    cudaMemcpy(d_a, a.data(), sizeof(float) * n * n, cudaMemcpyHostToDevice);
    cudaMemcpy(d_b, b.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
    int info = cholesky_solve(n, d_a, d_b);
    std::vector<float> x(n);
    cudaMemcpy(x.data(), d_b, sizeof(float) * n, cudaMemcpyDeviceToHost);
    cudaFree(d_a);
    cudaFree(d_b);
    if (info != 0) {
        std::printf("FAIL: info %d\n", info);
        return 1;
    }
    for (int r = 0; r < n; ++r) {
        double ax = 0.0, mag = std::fabs(b[r]);
        for (int c = 0; c < n; ++c) {
            ax += (double)a[c * n + r] * x[c];
            mag += std::fabs((double)a[c * n + r] * x[c]);
        }
        if (!(std::fabs(ax - b[r]) <= 1e-4 * mag)) {
            std::printf("FAIL: residual %g in row %d\n", ax - b[r], r);
            return 1;
        }
    }
    std::printf("PASS\n");
    return 0;
}
