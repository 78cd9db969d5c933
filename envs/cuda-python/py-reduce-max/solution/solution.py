import math

import numpy as np
from numba import cuda, float32

THREADS = 256
MAX_BLOCKS = 1024


@cuda.jit
def _block_max_kernel(x, result):
    # Grid-stride scan into a per-thread max, shared-memory tree per block,
    # then one atomic max per block into result[0].
    buf = cuda.shared.array(THREADS, dtype=float32)
    tid = cuda.threadIdx.x
    n = x.shape[0]
    m = -math.inf
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        v = x[i]
        if v > m:
            m = v
        i += stride
    buf[tid] = m
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if tid < step:
            other = buf[tid + step]
            if other > buf[tid]:
                buf[tid] = other
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        cuda.atomic.max(result, 0, buf[0])


def reduce_max(x):
    """Largest element of a 1-D float32 array (host or device); -inf when empty."""
    n = x.shape[0]
    if n == 0:
        return float("-inf")
    if isinstance(x, np.ndarray):
        x = cuda.to_device(x)
    result = cuda.to_device(np.array([-np.inf], dtype=np.float32))
    blocks = min((n + THREADS - 1) // THREADS, MAX_BLOCKS)
    _block_max_kernel[blocks, THREADS](x, result)
    return float(result.copy_to_host()[0])
