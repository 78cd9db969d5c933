#pragma once

// Solves A x = b in place (d_b <- x) for SPD, column-major A; returns the potrf info.
int cholesky_solve(int n, float* d_A, float* d_b);
