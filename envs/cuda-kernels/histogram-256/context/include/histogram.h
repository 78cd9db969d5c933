#pragma once
#include <cstddef>

// bins[b] = number of indices i in [0, n) with data[i] == b, for b = 0..255.
// data and bins are device pointers; data is not necessarily aligned (any byte address).
// bins points to 256 unsigned ints whose previous contents are unspecified: overwrite them.
// Work is issued on the default stream.
void histogram256(const unsigned char* data, size_t n, unsigned int* bins);
