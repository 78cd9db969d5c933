#pragma once

// d_vals: device array of finite floats. d_offsets: device array of num_segments + 1
// non-decreasing ints; segment s covers d_vals[d_offsets[s]] .. d_vals[d_offsets[s+1] - 1].
// Writes the maximum of each segment to d_out[s] (device array of num_segments floats);
// an empty segment (d_offsets[s] == d_offsets[s+1]) yields -FLT_MAX.
// Work goes to the default stream; the function may return before it finishes.
void segment_max(const float* d_vals, const int* d_offsets, int num_segments, float* d_out);
