#pragma once

// Sort `n` ints at DEVICE pointer `data` into ascending order, in place.
// n is 0 or a power of two with n <= 2^26 (data may be nullptr when n == 0).
// Work is issued on the default stream; the caller synchronizes.
void bitonic_sort(int* data, int n);
