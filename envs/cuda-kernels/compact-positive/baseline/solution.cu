// Naive baseline: per-block counts with shared atomics, a chunked serial scan of the block
// counts in one thread block, then a per-block Hillis-Steele scan in shared memory to place
// the elements. Scratch memory is allocated and freed on every call.
#include "compact.h"

#include <cuda_runtime.h>

#define BLOCK 256
#define SCAN_THREADS 1024

__global__ void count_blocks(const float* in, int n, int* block_counts)
{
    __shared__ int c;
    if (threadIdx.x == 0) c = 0;
    __syncthreads();
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n && in[i] > 0.0f) atomicAdd(&c, 1);
    __syncthreads();
    if (threadIdx.x == 0) block_counts[blockIdx.x] = c;
}

// One block: each thread serially sums a contiguous chunk of block counts, thread 0 serially
// scans the per-thread sums, then each thread serially writes the offsets of its chunk.
__global__ void serial_scan(const int* block_counts, int* block_offsets, int blocks, int* count)
{
    __shared__ int partial[SCAN_THREADS];
    const int chunk = (blocks + SCAN_THREADS - 1) / SCAN_THREADS;
    const int lo = threadIdx.x * chunk;
    const int hi = lo + chunk < blocks ? lo + chunk : blocks;
    int sum = 0;
    for (int b = lo; b < hi; ++b) sum += block_counts[b];
    partial[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        int run = 0;
        for (int t = 0; t < SCAN_THREADS; ++t) {
            const int v = partial[t];
            partial[t] = run;
            run += v;
        }
        *count = run;
    }
    __syncthreads();
    int run = partial[threadIdx.x];
    for (int b = lo; b < hi; ++b) {
        block_offsets[b] = run;
        run += block_counts[b];
    }
}

__global__ void place(const float* in, int n, const int* block_offsets, float* out)
{
    __shared__ int s[BLOCK];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    const int flag = (i < n && in[i] > 0.0f) ? 1 : 0;
    s[threadIdx.x] = flag;
    __syncthreads();
    for (int off = 1; off < BLOCK; off *= 2) {
        const int add = threadIdx.x >= off ? s[threadIdx.x - off] : 0;
        __syncthreads();
        s[threadIdx.x] += add;
        __syncthreads();
    }
    if (flag) out[block_offsets[blockIdx.x] + s[threadIdx.x] - 1] = in[i];
}

void compact_positive(const float* in, int n, float* out, int* count)
{
    if (n <= 0) {
        cudaMemset(count, 0, sizeof(int));
        return;
    }
    const int blocks = (n + BLOCK - 1) / BLOCK;
    int* scratch = nullptr;
    cudaMalloc(&scratch, 2 * sizeof(int) * blocks);
    count_blocks<<<blocks, BLOCK>>>(in, n, scratch);
    serial_scan<<<1, SCAN_THREADS>>>(scratch, scratch + blocks, blocks, count);
    place<<<blocks, BLOCK>>>(in, n, scratch + blocks, out);
    cudaFree(scratch);
}
