#pragma once

// Stream compaction: keep the strictly positive elements, in their original order.
//
// `in`:    DEVICE array of n floats, 0 <= n <= 2^28. No NaNs. A value is kept iff (v > 0.0f):
//          -0.0f and +0.0f are dropped, positive subnormals are kept.
// `out`:   DEVICE array with room for n floats. out[0 .. count-1] receives the kept values, in
//          the order they appear in `in`, bit for bit. Entries past count may hold anything.
// `count`: DEVICE pointer to one int, set to the number of kept elements (also when n == 0).
//
// You may allocate and free temporary device memory inside the call. Work is issued on the
// default stream; the caller synchronizes.
void compact_positive(const float* in, int n, float* out, int* count);
