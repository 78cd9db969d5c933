#pragma once

// Row-wise layer normalisation of a rows x cols row-major matrix x:
//   mean_r = (1/cols) * sum_j x[r][j]
//   var_r  = (1/cols) * sum_j (x[r][j] - mean_r)^2          (biased / population variance)
//   y[r][j] = (x[r][j] - mean_r) / sqrt(var_r + eps) * gamma[j] + beta[j]
// x, gamma (cols), beta (cols), y are device pointers (4-byte aligned); y does not overlap
// the inputs. rows >= 0, cols >= 1, rows * cols < 2^31, eps > 0.
// Work is issued on the default stream.
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y,
                    int rows, int cols, float eps);
