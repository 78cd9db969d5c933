import numpy as np
from numba import cuda, float32

TILE = 16


@cuda.jit
def _tiled_matmul_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), dtype=float32)
    sB = cuda.shared.array((TILE, TILE), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M = C.shape[0]
    N = C.shape[1]
    K = A.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        k_a = t * TILE + tx
        k_b = t * TILE + ty
        sA[ty, tx] = A[row, k_a] if (row < M and k_a < K) else float32(0.0)
        sB[ty, tx] = B[k_b, col] if (k_b < K and col < N) else float32(0.0)
        cuda.syncthreads()
        for q in range(TILE):
            acc += sA[ty, q] * sB[q, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul(A, B, C):
    """C = A @ B for row-major float32 matrices (all host or all device arrays)."""
    M, N = C.shape
    if M == 0 or N == 0:
        return
    grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)
    _tiled_matmul_kernel[grid, (TILE, TILE)](A, B, C)
