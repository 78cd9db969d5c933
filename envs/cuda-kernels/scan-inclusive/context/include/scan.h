#pragma once

// Inclusive prefix sum: out[i] = in[0] + in[1] + ... + in[i] for 0 <= i < n.
// in and out are device pointers (4-byte aligned) to non-overlapping arrays; n >= 0.
// Arithmetic is ordinary 32-bit int addition (inputs are chosen so that no prefix overflows).
// Work is issued on the default stream.
void inclusive_scan(const int* in, int* out, int n);
