#pragma once

// One Jacobi relaxation step of the 2D Laplace equation on a ny x nx grid.
//
// Layout: row-major, cell (row r, column c) is at index r * nx + c, 0 <= r < ny, 0 <= c < nx.
// `in` and `out` are DEVICE pointers to distinct, non-overlapping arrays of nx * ny floats.
//
// Boundary cells (r == 0, r == ny - 1, c == 0 or c == nx - 1) hold fixed values:
//     out[r][c] = in[r][c]
// Every interior cell becomes the average of its four neighbours:
//     out[r][c] = 0.25f * (in[r-1][c] + in[r+1][c] + in[r][c-1] + in[r][c+1])
//
// 0 <= nx, ny <= 2^19 and nx * ny < 2^31; when nx or ny is 0 there is nothing to do.
// Work is issued on the default stream; the caller synchronizes.
void jacobi_step(const float* in, float* out, int nx, int ny);
