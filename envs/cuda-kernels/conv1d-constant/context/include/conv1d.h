#pragma once

// Largest filter radius; a filter of radius r has 2 * r + 1 taps.
#define CONV1D_MAX_RADIUS 32

// Store a filter of radius `radius` (0 <= radius <= CONV1D_MAX_RADIUS) in __constant__ memory.
// `h_weights` is a HOST pointer to 2 * radius + 1 floats. The filter stays in effect for every
// later conv1d_apply call until the next conv1d_set_filter call.
void conv1d_set_filter(const float* h_weights, int radius);

// out[i] = sum_{k = -r}^{r} w[k + r] * in[i + k]   for 0 <= i < n, where r is the current
// radius, w the current weights, and in[j] counts as 0.0f when j < 0 or j >= n.
// `in` and `out` are DEVICE pointers to distinct arrays of n floats; n >= 0.
// Work is issued on the default stream; the caller synchronizes.
void conv1d_apply(const float* in, float* out, int n);
