#pragma once
#include <cstddef>

// Uniform (0, 1] floats into d_out[0..n), reproducible for a given seed.
void fill_uniform(float* d_out, size_t n, unsigned long long seed);
