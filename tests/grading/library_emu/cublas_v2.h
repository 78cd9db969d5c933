// For the tests only: a host stand-in for the cuBLAS calls the bundled cuBLAS problems make,
// so their runners, references and baselines run on cuemu (tests/families/cuemu), where
// device memory is host memory. Column-major BLAS semantics (op flags, leading dimensions,
// strides, alpha and beta; beta == 0 never reads C, as BLAS specifies) computed the plain way
// in double, and cuBLAS's argument checks: a wrong leading dimension is refused, not guessed.
#pragma once
#include <cuda_runtime.h>
#include <vector>

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

struct cuemu_cublas {
    cublasPointerMode_t pointer = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cudaStream_t stream = nullptr;
};
typedef cuemu_cublas* cublasHandle_t;

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
    *h = new cuemu_cublas();
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasGetPointerMode(cublasHandle_t h, cublasPointerMode_t* m) { *m = h->pointer; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t m) { h->pointer = m; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* m) { *m = h->math; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { h->math = m; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t* s) { *s = h->stream; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) { h->stream = s; return CUBLAS_STATUS_SUCCESS; }

namespace cuemu_blas {
// Element (i, j) of op(M), M column-major with leading dimension ld.
inline float at(const float* M, int ld, cublasOperation_t op, long long i, long long j) {
    return op == CUBLAS_OP_N ? M[i + j * ld] : M[j + i * ld];
}
inline int max1(int v) { return v > 1 ? v : 1; }
}  // namespace cuemu_blas

inline cublasStatus_t cublasSaxpy(cublasHandle_t, int n, const float* alpha, const float* x, int incx, float* y, int incy) {
    if (n < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (long long i = 0; i < n; ++i) y[i * incy] = *alpha * x[i * incx] + y[i * incy];
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSdot(cublasHandle_t, int n, const float* x, int incx, const float* y, int incy, float* result) {
    double s = 0.0;
    for (long long i = 0; i < n; ++i) s += (double)x[i * incx] * (double)y[i * incy];
    *result = (float)s;
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSgemv(cublasHandle_t, cublasOperation_t trans, int m, int n, const float* alpha, const float* A,
                                  int lda, const float* x, int incx, const float* beta, float* y, int incy) {
    if (m < 0 || n < 0 || lda < cuemu_blas::max1(m) || incx == 0 || incy == 0) return CUBLAS_STATUS_INVALID_VALUE;
    const int rows = trans == CUBLAS_OP_N ? m : n, cols = trans == CUBLAS_OP_N ? n : m;
    for (long long i = 0; i < rows; ++i) {
        double s = 0.0;
        for (long long j = 0; j < cols; ++j) s += (double)cuemu_blas::at(A, lda, trans, i, j) * x[j * incx];
        const double old = *beta == 0.0f ? 0.0 : (double)*beta * y[i * incy];
        y[i * incy] = (float)(*alpha * s + old);
    }
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float* alpha, const float* A, int lda, const float* B, int ldb,
                                  const float* beta, float* C, int ldc) {
    const int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < cuemu_blas::max1(a_rows) || ldb < cuemu_blas::max1(b_rows) ||
        ldc < cuemu_blas::max1(m))
        return CUBLAS_STATUS_INVALID_VALUE;
    for (long long j = 0; j < n; ++j)
        for (long long i = 0; i < m; ++i) {
            double s = 0.0;
            for (long long p = 0; p < k; ++p)
                s += (double)cuemu_blas::at(A, lda, ta, i, p) * cuemu_blas::at(B, ldb, tb, p, j);
            float& c = C[i + j * ldc];
            c = (float)(*alpha * s + (*beta == 0.0f ? 0.0 : (double)*beta * c));
        }
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                                int n, int k, const float* alpha, const float* A, int lda,
                                                long long stride_a, const float* B, int ldb, long long stride_b,
                                                const float* beta, float* C, int ldc, long long stride_c, int batch) {
    if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (long long b = 0; b < batch; ++b) {
        cublasStatus_t s = cublasSgemm(h, ta, tb, m, n, k, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                                       C + b * stride_c, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}
