#pragma once
#include <cuda_runtime.h>

// Applies `iters` relaxation iterations to the device array d_x (n floats), in place.
// One iteration is two steps, each over all i in [0, n):
//   step 1: tmp[i] = 0.25f * x[max(i-1, 0)] + 0.5f * x[i] + 0.25f * x[min(i+1, n-1)]
//   step 2: x[i]   = 0.99f * tmp[i] + 0.01f
// d_tmp is device scratch space of n floats (its final contents do not matter).
// All work is enqueued on `stream` (a non-default stream created by the caller); the
// function may return before the work has finished.
void relax_iterations(float* d_x, float* d_tmp, int n, int iters, cudaStream_t stream);
