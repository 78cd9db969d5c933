// Naive baseline: one thread block walks the array tile by tile; each tile is scanned with a
// shared-memory Hillis-Steele scan and offset by the running total of the earlier tiles.
#include "prefix_offsets.h"
#include <cstdio>
#include <cstdlib>

__global__ void single_block_scan(const int* in, long long* out, int n)
{
    __shared__ long long buf[1024];
    __shared__ long long carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < n; base += blockDim.x) {
        int i = base + threadIdx.x;
        long long v = i < n ? (long long)in[i] : 0;
        buf[threadIdx.x] = v;
        __syncthreads();
        for (int off = 1; off < blockDim.x; off *= 2) {
            long long add = threadIdx.x >= off ? buf[threadIdx.x - off] : 0;
            __syncthreads();
            buf[threadIdx.x] += add;
            __syncthreads();
        }
        if (i < n) out[i] = carry + buf[threadIdx.x] - v;  // inclusive -> exclusive
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) carry += buf[threadIdx.x];
        __syncthreads();
    }
}

void exclusive_offsets(const int* d_in, long long* d_out, int n, cudaStream_t stream)
{
    if (n <= 0) return;
    single_block_scan<<<1, 1024, 0, stream>>>(d_in, d_out, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(e));
        abort();
    }
}
