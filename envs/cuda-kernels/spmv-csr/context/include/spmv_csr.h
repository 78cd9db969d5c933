#pragma once

// y = A * x for a sparse n_rows x n_cols matrix A in CSR form. All pointers are DEVICE pointers.
//
//   row_ptr: n_rows + 1 ints, row_ptr[0] == 0, non-decreasing, row_ptr[n_rows] == nnz
//   col_idx: nnz ints in [0, n_cols); no column repeats within a row (order within a row is
//            arbitrary)
//   vals:    nnz floats, vals[e] is the entry at (row of e, col_idx[e])
//   x:       n_cols floats
//   y:       n_rows floats, every entry is written (an empty row gives 0.0f)
//
// n_rows >= 0, n_cols >= 1, 0 <= nnz < 2^31. Work is issued on the default stream; the caller
// synchronizes.
void spmv_csr(int n_rows, int n_cols, int nnz, const int* row_ptr, const int* col_idx,
              const float* vals, const float* x, float* y);
