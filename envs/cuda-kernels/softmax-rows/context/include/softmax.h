#pragma once

// Row-wise softmax of a rows x cols row-major matrix:
//   out[r][j] = exp(in[r][j] - m_r) / sum_k exp(in[r][k] - m_r),  m_r = max_k in[r][k].
// in and out are device pointers to non-overlapping arrays (4-byte aligned).
// rows >= 0, cols >= 1, rows * cols < 2^31. Entries are finite or -INFINITY (a masked
// entry, whose output is 0); every row has at least one finite entry.
// Work is issued on the default stream.
void softmax_rows(const float* in, float* out, int rows, int cols);
