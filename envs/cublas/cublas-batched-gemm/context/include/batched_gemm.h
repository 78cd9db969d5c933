#pragma once
#include <cublas_v2.h>

// `batch` independent products C_b = A_b * B_b, b = 0 .. batch-1.
// All matrices are column-major, in device memory, packed back to back with no padding:
//   A_b = A + b*m*k : m x k, leading dimension m
//   B_b = B + b*k*n : k x n, leading dimension k
//   C_b = C + b*m*n : m x n, leading dimension m (previous contents are ignored)
// m, n, k >= 1, batch >= 0. `handle` is a valid cuBLAS handle in its default state
// (host pointer mode, default stream). The call may return before the GPU work finishes;
// all work must be ordered on the handle's stream.
void batched_gemm(cublasHandle_t handle, int m, int n, int k, int batch,
                  const float* A, const float* B, float* C);
