#include "csr_spmv.h"

#include <cuda_runtime.h>
#include <cusparse.h>

void csr_spmv(int rows, int cols, int nnz, const int* d_row_ptr, const int* d_col_idx,
              const float* d_vals, const float* d_x, float* d_y) {
    cusparseHandle_t handle;
    if (cusparseCreate(&handle) != CUSPARSE_STATUS_SUCCESS) return;
    cusparseConstSpMatDescr_t mat;
    cusparseConstDnVecDescr_t vx;
    cusparseDnVecDescr_t vy;
    cusparseCreateConstCsr(&mat, rows, cols, nnz, d_row_ptr, d_col_idx, d_vals,
                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                           CUDA_R_32F);
    cusparseCreateConstDnVec(&vx, cols, d_x, CUDA_R_32F);
    cusparseCreateDnVec(&vy, rows, d_y, CUDA_R_32F);
    const float alpha = 1.0f, beta = 0.0f;
    size_t bytes = 0;
    cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vx, &beta,
                            vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes);
    void* buffer = nullptr;
    if (bytes > 0) cudaMalloc(&buffer, bytes);
    cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vx, &beta, vy,
                 CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer);
    cudaDeviceSynchronize();
    cudaFree(buffer);
    cusparseDestroyDnVec(vy);
    cusparseDestroyDnVec(vx);
    cusparseDestroySpMat(mat);
    cusparseDestroy(handle);
}
