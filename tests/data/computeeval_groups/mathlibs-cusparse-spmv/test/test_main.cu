// A banded-plus-scattered matrix; the product is checked against a host loop in double.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "csr_spmv.h"

template <typename T>
static T* to_device(const std::vector<T>& host) {
    T* d = nullptr;
    cudaMalloc(&d, host.size() * sizeof(T));
    cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}

int main() {
    const int rows = 517, cols = 389;
    std::vector<int> row_ptr(1, 0), col_idx;
    std::vector<float> vals;
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            if ((r * 7 + c * 13) % 29 == 0 || c == r % cols) {
                col_idx.push_back(c);
                vals.push_back(0.5f + (float)((r * 31 + c * 17) % 11) / 8.0f);
            }
        }
        row_ptr.push_back((int)col_idx.size());
    }
    std::vector<float> x(cols), y(rows, -7.0f);
    for (int c = 0; c < cols; ++c) x[c] = std::cos(0.3f * c);
    int* d_row_ptr = to_device(row_ptr);
    int* d_col_idx = to_device(col_idx);
    float* d_vals = to_device(vals);
    float* d_x = to_device(x);
    float* d_y = to_device(y);
    csr_spmv(rows, cols, (int)vals.size(), d_row_ptr, d_col_idx, d_vals, d_x, d_y);
    cudaMemcpy(y.data(), d_y, rows * sizeof(float), cudaMemcpyDeviceToHost);
    for (int r = 0; r < rows; ++r) {
        double want = 0.0, mag = 0.0;
        for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
            want += (double)vals[k] * x[col_idx[k]];
            mag += std::fabs((double)vals[k] * x[col_idx[k]]);
        }
        if (!(std::fabs(y[r] - want) <= 1e-5 * mag + 1e-6)) {
            std::printf("FAIL: row %d got %g want %g\n", r, y[r], want);
            return 1;
        }
    }
    cudaFree(d_row_ptr); cudaFree(d_col_idx); cudaFree(d_vals); cudaFree(d_x); cudaFree(d_y);
    std::printf("PASS\n");
    return 0;
}
