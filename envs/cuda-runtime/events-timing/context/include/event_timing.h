#pragma once
#include <cuda_runtime.h>

struct PhaseTimes {
    float first_ms;   // GPU time of the first busy kernel
    float second_ms;  // GPU time of the second busy kernel
    float total_ms;   // GPU time from just before the first kernel to the end of the second
};

// Provided by the test harness (do not implement it): enqueues one busy-wait kernel on
// `stream` that keeps the GPU busy for about `cycles` SM clock cycles.
void launch_busy_kernel(long long cycles, cudaStream_t stream);

// To implement: run launch_busy_kernel(cycles_first, s) and then launch_busy_kernel(cycles_second, s)
// on one stream s and return their GPU times measured with CUDA events.
PhaseTimes time_two_phases(long long cycles_first, long long cycles_second);
