#pragma once
#include <cufft.h>

// In-place, unnormalised forward C2C transform of n points in device memory.
void fft_forward(cufftComplex* d_data, int n);
