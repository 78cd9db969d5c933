// Vector CSR: a group of G lanes (G = 2..32, picked from the mean row length) works on one row,
// reading the row's entries with consecutive lanes, then reduces with warp shuffles.
#include "spmv_csr.h"

#include <cuda_runtime.h>

namespace {

template <int G>
__global__ void __launch_bounds__(256) spmv_vector(int n_rows, const int* __restrict__ row_ptr,
                                                   const int* __restrict__ col_idx,
                                                   const float* __restrict__ vals,
                                                   const float* __restrict__ x, float* __restrict__ y)
{
    const int lane = threadIdx.x & (G - 1);
    const long long gid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long row = gid / G;
    // Rows past the end still take part in the shuffles below, with no work of their own.
    float sum = 0.0f;
    if (row < n_rows) {
        const int begin = __ldg(row_ptr + row);
        const int end = __ldg(row_ptr + row + 1);
        for (int e = begin + lane; e < end; e += G) sum = fmaf(__ldg(vals + e), __ldg(x + __ldg(col_idx + e)), sum);
    }
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off, G);
    if (row < n_rows && lane == 0) y[row] = sum;
}

template <int G>
void launch(int n_rows, const int* row_ptr, const int* col_idx, const float* vals, const float* x,
            float* y)
{
    const long long threads = static_cast<long long>(n_rows) * G;
    const int block = 256;
    const unsigned grid = static_cast<unsigned>((threads + block - 1) / block);
    spmv_vector<G><<<grid, block>>>(n_rows, row_ptr, col_idx, vals, x, y);
}

}  // namespace

void spmv_csr(int n_rows, int n_cols, int nnz, const int* row_ptr, const int* col_idx,
              const float* vals, const float* x, float* y)
{
    (void)n_cols;
    if (n_rows <= 0) return;
    const double mean = static_cast<double>(nnz) / n_rows;
    if (mean > 24) launch<32>(n_rows, row_ptr, col_idx, vals, x, y);
    else if (mean > 12) launch<16>(n_rows, row_ptr, col_idx, vals, x, y);
    else if (mean > 6) launch<8>(n_rows, row_ptr, col_idx, vals, x, y);
    else if (mean > 3) launch<4>(n_rows, row_ptr, col_idx, vals, x, y);
    else launch<2>(n_rows, row_ptr, col_idx, vals, x, y);
}
