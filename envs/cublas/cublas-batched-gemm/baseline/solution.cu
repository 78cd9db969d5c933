#include <cublas_v2.h>
#include "batched_gemm.h"

// Baseline: one cublasSgemm call (one kernel launch) per matrix of the batch.
void batched_gemm(cublasHandle_t handle, int m, int n, int k, int batch,
                  const float* A, const float* B, float* C) {
    const float alpha = 1.0f, beta = 0.0f;
    for (int b = 0; b < batch; ++b)
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                    A + (size_t)b * m * k, m, B + (size_t)b * k * n, k, &beta,
                    C + (size_t)b * m * n, m);
}
