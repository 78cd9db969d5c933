#pragma once

// d_y[i] = a * d_x[i] for i < n, with a kernel compiled at run time; 0 on success.
int scale_rtc(float a, const float* d_x, float* d_y, int n);
