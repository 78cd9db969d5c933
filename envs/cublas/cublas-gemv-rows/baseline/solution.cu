#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "gemv_rows.h"

// Naive baseline: one thread per output row, walking its row serially (neighbouring threads
// read addresses `cols` floats apart, so the loads are not coalesced).
__global__ void naive_gemv_rows_kernel(int rows, int cols, const float* A, const float* x,
                                       float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const float* row = A + (size_t)i * cols;
    float acc = 0.0f;
    for (int j = 0; j < cols; ++j) acc += row[j] * x[j];
    y[i] = acc;
}

void gemv_rows(cublasHandle_t handle, int rows, int cols, const float* A, const float* x,
               float* y) {
    if (rows <= 0) return;
    cudaStream_t stream = nullptr;
    cublasGetStream(handle, &stream);
    const int threads = 128;
    naive_gemv_rows_kernel<<<(rows + threads - 1) / threads, threads, 0, stream>>>(rows, cols, A, x, y);
}
