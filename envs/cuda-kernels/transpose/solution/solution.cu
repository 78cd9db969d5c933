#include <cuda_runtime.h>
#include "transpose.h"

// Classic tiled transpose: a 32x32 tile is read with coalesced row accesses into shared
// memory (padded by one column so column reads are conflict-free) and written back with
// coalesced row accesses of the output. Each thread handles 4 rows of the tile.
constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

__host__ __device__ inline int tiles_of(int n) { return n / kTile + (n % kTile != 0); }

__global__ void __launch_bounds__(kTile * kRowsPerPass)
transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[kTile][kTile + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c0 = blockIdx.x * kTile;
    const int row_tiles = tiles_of(rows);
    // grid.y is capped at 65535, so very tall matrices loop over row tiles.
    for (int by = blockIdx.y; by < row_tiles; by += gridDim.y) {
        const int r0 = by * kTile;
        const int c = c0 + tx;
        for (int j = ty; j < kTile; j += kRowsPerPass) {
            int r = r0 + j;
            if (r < rows && c < cols) tile[j][tx] = in[(size_t)r * cols + c];
        }
        __syncthreads();
        const int r = r0 + tx;  // column of the output row
        for (int j = ty; j < kTile; j += kRowsPerPass) {
            int oc = c0 + j;  // output row
            if (oc < cols && r < rows) out[(size_t)oc * rows + r] = tile[tx][j];
        }
        __syncthreads();  // the tile is refilled in the next iteration
    }
}

void transpose(const float* in, float* out, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    dim3 block(kTile, kRowsPerPass);
    int row_tiles = tiles_of(rows);
    dim3 grid(tiles_of(cols), row_tiles < 65535 ? row_tiles : 65535);
    transpose_tiled<<<grid, block>>>(in, out, rows, cols);
}
