#pragma once
#include <cuda_runtime.h>

enum LaunchStatus {
    LAUNCH_OK = 0,
    LAUNCH_NULL_POINTER = 1,     // n > 0 and d_x or d_y is null
    LAUNCH_EMPTY_CONFIG = 2,     // some component of grid or block is 0
    LAUNCH_BLOCK_TOO_LARGE = 3,  // block exceeds the device's per-block limits
    LAUNCH_GRID_TOO_LARGE = 4,   // grid exceeds the device's grid size limits
    LAUNCH_OTHER_ERROR = 5       // any other CUDA error during launch or execution
};

// Computes d_y[i] = a * d_x[i] + d_y[i] for 0 <= i < n on the current device, using one
// kernel launch with exactly the given grid and block shape; see the task text for the
// validation order and error semantics.
LaunchStatus checked_axpy(float a, const float* d_x, float* d_y, int n, dim3 grid, dim3 block);
