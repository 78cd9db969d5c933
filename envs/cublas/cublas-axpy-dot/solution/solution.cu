#include <cublas_v2.h>
#include "axpy_dot.h"

float axpy_dot(cublasHandle_t handle, int n, float a, const float* x, float* y) {
    if (n <= 0) return 0.0f;
    cublasSaxpy(handle, n, &a, x, 1, y, 1);
    float result = 0.0f;
    // Host pointer mode: cublasSdot blocks until the result is in `result`.
    cublasSdot(handle, n, x, 1, y, 1, &result);
    return result;
}
