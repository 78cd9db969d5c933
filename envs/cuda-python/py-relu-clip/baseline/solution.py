import numpy as np
from numba import cuda

THREADS = 256


@cuda.jit
def _threshold_kernel(x, lo, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = v if v > lo else 0.0


@cuda.jit
def _clip_kernel(out, hi):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = min(out[i], hi)


def relu_clip(x, lo, hi, out):
    # Deliberately unfused: two passes over memory (threshold, then clip in place).
    n = out.shape[0]
    if n == 0:
        return
    blocks = (n + THREADS - 1) // THREADS
    _threshold_kernel[blocks, THREADS](x, np.float32(lo), out)
    _clip_kernel[blocks, THREADS](out, np.float32(hi))
