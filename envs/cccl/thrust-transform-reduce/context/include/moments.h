#pragma once

// d_x: device array of n floats (n >= 0). Writes the arithmetic mean and the population
// variance (mean of squared deviations from the mean) of the n values to *mean and
// *variance (host pointers), both computed in double precision. For n == 0 both are 0.
void mean_and_variance(const float* d_x, int n, double* mean, double* variance);
