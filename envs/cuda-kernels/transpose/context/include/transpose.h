#pragma once

// in:  rows x cols matrix, row-major: element (r, c) at in[r * cols + c].
// out: cols x rows matrix, row-major: element (c, r) at out[c * rows + r] = in[r * cols + c].
// Device pointers, non-overlapping, 4-byte aligned. rows >= 0, cols >= 0, rows * cols < 2^31.
// Work is issued on the default stream.
void transpose(const float* in, float* out, int rows, int cols);
