#include "cholesky_solve.h"

#include <cuda_runtime.h>
#include <cusolverDn.h>

int cholesky_solve(int n, float* d_A, float* d_b) {
    cusolverDnHandle_t handle;
    if (cusolverDnCreate(&handle) != CUSOLVER_STATUS_SUCCESS) return -1;
    int lwork = 0;
    cusolverDnSpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, n, d_A, n, &lwork);
    float* work = nullptr;
    int* d_info = nullptr;
    cudaMalloc(&work, sizeof(float) * (lwork > 0 ? lwork : 1));
    cudaMalloc(&d_info, sizeof(int));
    cusolverDnSpotrf(handle, CUBLAS_FILL_MODE_LOWER, n, d_A, n, work, lwork, d_info);
    int info = -1;
    cudaMemcpy(&info, d_info, sizeof(int), cudaMemcpyDeviceToHost);
    if (info == 0) {
        cusolverDnSpotrs(handle, CUBLAS_FILL_MODE_LOWER, n, 1, d_A, n, d_b, n, d_info);
        cudaMemcpy(&info, d_info, sizeof(int), cudaMemcpyDeviceToHost);
    }
    cudaFree(work);
    cudaFree(d_info);
    cusolverDnDestroy(handle);
    return info;
}
