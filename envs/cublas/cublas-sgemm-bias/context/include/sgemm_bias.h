#pragma once
#include <cublas_v2.h>

// All matrices are column-major and live in device memory.
//   A: m x k, leading dimension m   (element (i,p) at A[i + p*m])
//   B: k x n, leading dimension k   (element (p,j) at B[p + j*k])
//   C: m x n, leading dimension m   (element (i,j) at C[i + j*m])
//   bias: m floats; bias[i] is added to every element of row i.
// Computes C = alpha * A * B + bias  (the previous contents of C are ignored).
// m, n >= 1, k >= 0. `handle` is a valid cuBLAS handle in its default state
// (host pointer mode, default stream). The call may return before the GPU work
// finishes; all work must be ordered on the handle's stream.
void sgemm_bias(cublasHandle_t handle, int m, int n, int k, float alpha,
                const float* A, const float* B, const float* bias, float* C);
