// Naive baseline: scalar CSR, one thread per row.
#include "spmv_csr.h"

#include <cuda_runtime.h>

__global__ void spmv_scalar(int n_rows, const int* row_ptr, const int* col_idx, const float* vals,
                            const float* x, float* y)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    float sum = 0.0f;
    for (int e = row_ptr[row]; e < row_ptr[row + 1]; ++e) sum += vals[e] * x[col_idx[e]];
    y[row] = sum;
}

void spmv_csr(int n_rows, int n_cols, int nnz, const int* row_ptr, const int* col_idx,
              const float* vals, const float* x, float* y)
{
    (void)n_cols;
    (void)nnz;
    if (n_rows <= 0) return;
    spmv_scalar<<<(n_rows + 255) / 256, 256>>>(n_rows, row_ptr, col_idx, vals, x, y);
}
