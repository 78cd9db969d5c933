#include <cuda_runtime.h>
#include "histogram.h"

// Naive baseline: one thread per byte, one global atomic per byte.
__global__ void zero_bins(unsigned int* bins) { bins[threadIdx.x] = 0u; }

__global__ void hist_global(const unsigned char* data, size_t n, unsigned int* bins) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1u);
}

void histogram256(const unsigned char* data, size_t n, unsigned int* bins) {
    zero_bins<<<1, 256>>>(bins);
    if (n == 0) return;
    const unsigned block = 256;
    hist_global<<<(unsigned)((n + block - 1) / block), block>>>(data, n, bins);
}
