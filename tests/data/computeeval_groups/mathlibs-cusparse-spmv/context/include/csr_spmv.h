#pragma once

// y[0..rows) = A * x for the CSR matrix (row_ptr[rows + 1], col_idx[nnz], vals[nnz]).
void csr_spmv(int rows, int cols, int nnz, const int* d_row_ptr, const int* d_col_idx,
              const float* d_vals, const float* d_x, float* d_y);
