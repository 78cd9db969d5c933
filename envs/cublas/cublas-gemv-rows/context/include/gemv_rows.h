#pragma once
#include <cublas_v2.h>

// A is a ROW-MAJOR matrix with `rows` rows and `cols` columns in device memory:
// element (i, j) is at A[i * cols + j] (no padding). x has `cols` floats, y has `rows`
// floats, all in device memory. Computes y = A * x, i.e. y[i] = sum_j A[i*cols + j] * x[j].
// rows >= 0, cols >= 0; with cols == 0 every y[i] is 0. The previous contents of y are
// ignored. `handle` is a valid cuBLAS handle in its default state (host pointer mode,
// default stream). The call may return before the GPU work finishes; all work must be
// ordered on the handle's stream.
void gemv_rows(cublasHandle_t handle, int rows, int cols, const float* A, const float* x,
               float* y);
