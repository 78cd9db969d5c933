#pragma once

// C = A * B in single precision, all matrices row-major and stored densely:
//   A is M x K (A[i * K + k]), B is K x N (B[k * N + j]), C is M x N (C[i * N + j]).
// A, B, C are device pointers (4-byte aligned); C does not overlap A or B.
// M, N, K >= 1. C is overwritten. Work is issued on the default stream.
void sgemm(int M, int N, int K, const float* A, const float* B, float* C);
