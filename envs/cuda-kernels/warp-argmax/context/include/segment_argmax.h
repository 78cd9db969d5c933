#pragma once

// Segmented argmax over segments of 32 consecutive elements.
//
// `x` is a DEVICE array of n finite floats (no NaN, no infinity), 0 <= n <= 2^30. Segment s covers
// x[32*s] .. x[min(32*s + 32, n) - 1], for 0 <= s < num_segments = (n + 31) / 32 (the last
// segment may be shorter). For every segment:
//   seg_arg[s] = the global index i of the largest value in the segment; among equal values
//                (which includes -0.0f and +0.0f, as they compare equal) the smallest index wins
//   seg_max[s] = x[seg_arg[s]], bit for bit
// `seg_max` and `seg_arg` are DEVICE arrays of num_segments entries.
// Work is issued on the default stream; the caller synchronizes.
void segment_argmax(const float* x, int n, float* seg_max, int* seg_arg);
