#pragma once

// z[i] = alpha * x[i] + beta * y[i]   for 0 <= i < n.
// x, y, z are device pointers (4-byte aligned, not necessarily 16-byte aligned).
// z does not overlap x or y. n >= 0. Work is issued on the default stream.
void axpby(int n, float alpha, const float* x, float beta, const float* y, float* z);
