#include <cuda_runtime.h>
#include "scan.h"

// Naive baseline: Hillis-Steele scan in global memory, one launch per doubling step
// (log2(n) passes over the whole array), ping-ponging between out and a temporary buffer.
__global__ void hs_step(const int* src, int* dst, int n, int offset) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = src[i];
    if (i >= offset) v += src[i - offset];
    dst[i] = v;
}

__global__ void copy_ints(const int* src, int* dst, int n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

void inclusive_scan(const int* in, int* out, int n) {
    if (n <= 0) return;
    int* tmp = nullptr;
    if (cudaMalloc(&tmp, (size_t)n * sizeof(int)) != cudaSuccess) return;
    const int block = 256;
    const int grid = (int)(((long long)n + block - 1) / block);
    copy_ints<<<grid, block>>>(in, out, n);
    int* src = out;
    int* dst = tmp;
    for (long long offset = 1; offset < n; offset <<= 1) {
        hs_step<<<grid, block>>>(src, dst, n, (int)offset);
        int* t = src; src = dst; dst = t;
    }
    if (src != out) copy_ints<<<grid, block>>>(src, out, n);
    cudaFree(tmp);  // synchronizes the device
}
