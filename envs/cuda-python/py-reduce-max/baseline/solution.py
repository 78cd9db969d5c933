import math

import numpy as np
from numba import cuda, float32

THREADS = 256


@cuda.jit
def _one_block_max_kernel(x, result):
    # Deliberately naive: a single block scans the whole array.
    buf = cuda.shared.array(THREADS, dtype=float32)
    tid = cuda.threadIdx.x
    m = -math.inf
    i = tid
    while i < x.shape[0]:
        m = max(m, x[i])
        i += THREADS
    buf[tid] = m
    cuda.syncthreads()
    if tid == 0:
        best = buf[0]
        for t in range(1, THREADS):
            best = max(best, buf[t])
        result[0] = best


def reduce_max(x):
    if x.shape[0] == 0:
        return float("-inf")
    result = cuda.device_array(1, dtype=np.float32)
    _one_block_max_kernel[1, THREADS](x, result)
    return float(result.copy_to_host()[0])
