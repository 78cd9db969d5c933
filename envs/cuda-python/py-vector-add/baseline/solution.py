import numpy as np
from numba import cuda

THREADS = 256


@cuda.jit
def _vector_add_one_block(a, b, out):
    # Deliberately naive: a single thread block walks the whole array.
    i = cuda.threadIdx.x
    while i < out.shape[0]:
        out[i] = a[i] + b[i]
        i += cuda.blockDim.x


def vector_add(a, b, out):
    if out.shape[0] == 0:
        return
    _vector_add_one_block[1, THREADS](a, b, out)
