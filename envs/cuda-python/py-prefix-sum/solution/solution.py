import numpy as np
from numba import cuda, int32

THREADS = 256


@cuda.jit
def _block_scan_kernel(x, out, block_sums):
    # Inclusive Hillis-Steele scan of one THREADS-sized tile in shared memory.
    buf = cuda.shared.array(THREADS, dtype=int32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * THREADS + tid
    n = x.shape[0]
    buf[tid] = x[i] if i < n else 0
    cuda.syncthreads()
    offset = 1
    while offset < THREADS:
        add = buf[tid - offset] if tid >= offset else 0
        cuda.syncthreads()
        buf[tid] += add
        cuda.syncthreads()
        offset *= 2
    if i < n:
        out[i] = buf[tid]
    if tid == THREADS - 1:
        block_sums[cuda.blockIdx.x] = buf[tid]


@cuda.jit
def _add_offsets_kernel(out, scanned_sums):
    b = cuda.blockIdx.x
    i = b * THREADS + cuda.threadIdx.x
    if b > 0 and i < out.shape[0]:
        out[i] += scanned_sums[b - 1]


def _scan_device(d_x, d_out):
    n = d_x.shape[0]
    blocks = (n + THREADS - 1) // THREADS
    sums = cuda.device_array(blocks, dtype=np.int32)
    _block_scan_kernel[blocks, THREADS](d_x, d_out, sums)
    if blocks > 1:
        scanned = cuda.device_array(blocks, dtype=np.int32)
        _scan_device(sums, scanned)  # recursive scan of the per-tile totals
        _add_offsets_kernel[blocks, THREADS](d_out, scanned)


def inclusive_scan(x, out):
    """out[i] = x[0] + ... + x[i] for 1-D int32 arrays (all host or all device arrays)."""
    n = x.shape[0]
    if n == 0:
        return
    if isinstance(out, np.ndarray):
        d_out = cuda.device_array(n, dtype=np.int32)
        _scan_device(cuda.to_device(x), d_out)
        d_out.copy_to_host(out)
    else:
        _scan_device(x, out)
