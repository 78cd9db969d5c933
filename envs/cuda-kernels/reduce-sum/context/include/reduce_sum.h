#pragma once

// Writes x[0] + x[1] + ... + x[n-1] to *out (a single float in device memory).
// x is a device pointer (4-byte aligned, not necessarily 16-byte aligned); n >= 0.
// For n == 0 the result is 0.0f. The previous contents of *out are unspecified.
// Work is issued on the default stream.
void reduce_sum(const float* x, int n, float* out);
