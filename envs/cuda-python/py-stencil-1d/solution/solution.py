import numpy as np
from numba import cuda, float32

THREADS = 256
MAX_RADIUS = 16
TILE_LEN = THREADS + 2 * MAX_RADIUS  # shared-array sizes must be compile-time constants
MAX_TAPS = 2 * MAX_RADIUS + 1


@cuda.jit
def _stencil_kernel(x, w, out, radius):
    # Each block stages its THREADS outputs' input window (tile + halo) and the weights in
    # shared memory, then every thread computes one output from shared memory.
    tile = cuda.shared.array(TILE_LEN, dtype=float32)
    ws = cuda.shared.array(MAX_TAPS, dtype=float32)
    tid = cuda.threadIdx.x
    base = cuda.blockIdx.x * THREADS
    n = x.shape[0]
    taps = 2 * radius + 1
    j = tid
    while j < THREADS + 2 * radius:
        g = base - radius + j
        tile[j] = x[g] if (g >= 0 and g < n) else float32(0.0)
        j += THREADS
    if tid < taps:
        ws[tid] = w[tid]
    cuda.syncthreads()
    i = base + tid
    if i < n:
        acc = float32(0.0)
        for k in range(taps):
            acc += ws[k] * tile[tid + k]
        out[i] = acc


def stencil_1d(x, weights, out):
    """out[i] = sum_k weights[k] * x[i + k - R] with zero padding (host or device arrays)."""
    n = x.shape[0]
    if n == 0:
        return
    radius = (weights.shape[0] - 1) // 2
    blocks = (n + THREADS - 1) // THREADS
    _stencil_kernel[blocks, THREADS](x, weights, out, radius)
