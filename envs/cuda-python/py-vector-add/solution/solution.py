import numpy as np
from numba import cuda

THREADS = 256


@cuda.jit
def _vector_add_kernel(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


def vector_add(a, b, out):
    """out[i] = a[i] + b[i] for 1-D float32 arrays (all host or all device arrays)."""
    n = out.shape[0]
    if n == 0:
        return
    blocks = (n + THREADS - 1) // THREADS
    _vector_add_kernel[blocks, THREADS](a, b, out)
