import numpy as np
from numba import cuda, float32

THREADS = 256


@cuda.jit
def _relu_clip_kernel(x, lo, hi, out):
    # Fused: one read and one write per element.
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < out.shape[0]:
        v = x[i]
        if v <= lo:
            v = float32(0.0)
        elif v > hi:
            v = hi
        out[i] = v
        i += stride


def relu_clip(x, lo, hi, out):
    """out = 0 where x <= lo, hi where x >= hi, x elsewhere (host or device float32 arrays)."""
    n = out.shape[0]
    if n == 0:
        return
    blocks = min((n + THREADS - 1) // THREADS, 8192)
    _relu_clip_kernel[blocks, THREADS](x, np.float32(lo), np.float32(hi), out)
