#pragma once
#include <cuda_runtime.h>

// d_in: device array of n non-negative ints; d_out: device array of n long longs.
// Writes the exclusive prefix sum: d_out[0] = 0, d_out[i] = d_in[0] + ... + d_in[i-1],
// computed in 64-bit arithmetic. All work is enqueued on `stream`; the function may return
// before it finishes (the caller synchronizes the stream).
void exclusive_offsets(const int* d_in, long long* d_out, int n, cudaStream_t stream);
