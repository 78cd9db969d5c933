#pragma once
#include <cublas_v2.h>

// x and y are device arrays of n floats (n >= 0).
// Updates y in place: y[i] = a * x[i] + y[i], then returns the dot product
// sum_i x[i] * y[i] computed with the UPDATED y.
// `handle` is a valid cuBLAS handle in its default state (host pointer mode,
// default stream). When the function returns, y holds its final values.
float axpy_dot(cublasHandle_t handle, int n, float a, const float* x, float* y);
