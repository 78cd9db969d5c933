#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "gemv_rows.h"

// A row-major rows x cols matrix is, bytewise, a column-major cols x rows matrix (lda = cols),
// i.e. A^T in cuBLAS terms. y = A x is therefore op(M) = M^T applied to x: CUBLAS_OP_T.
void gemv_rows(cublasHandle_t handle, int rows, int cols, const float* A, const float* x,
               float* y) {
    if (rows <= 0) return;
    if (cols <= 0) {
        cudaStream_t stream = nullptr;
        cublasGetStream(handle, &stream);
        cudaMemsetAsync(y, 0, (size_t)rows * sizeof(float), stream);
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasSgemv(handle, CUBLAS_OP_T, cols, rows, &one, A, cols, x, 1, &zero, y, 1);
}
