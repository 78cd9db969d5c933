import numpy as np
from numba import cuda, int32

THREADS = 256
MAX_BLOCKS = 1024
SHARED_BINS = 2048  # histograms up to this many bins are privatised in shared memory


@cuda.jit
def _zero_kernel(counts):
    i = cuda.grid(1)
    if i < counts.shape[0]:
        counts[i] = 0


@cuda.jit
def _shared_hist_kernel(values, counts):
    local = cuda.shared.array(SHARED_BINS, dtype=int32)
    nbins = counts.shape[0]
    tid = cuda.threadIdx.x
    b = tid
    while b < nbins:
        local[b] = 0
        b += cuda.blockDim.x
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < values.shape[0]:
        cuda.atomic.add(local, values[i], 1)
        i += stride
    cuda.syncthreads()
    b = tid
    while b < nbins:
        c = local[b]
        if c != 0:
            cuda.atomic.add(counts, b, c)
        b += cuda.blockDim.x


@cuda.jit
def _global_hist_kernel(values, counts):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < values.shape[0]:
        cuda.atomic.add(counts, values[i], 1)
        i += stride


def histogram(values, counts):
    """counts[b] = number of i with values[i] == b (all host or all device arrays)."""
    host_out = None
    if isinstance(counts, np.ndarray):
        host_out = counts
        values = cuda.to_device(values)
        counts = cuda.device_array(host_out.shape[0], dtype=np.int32)
    nbins = counts.shape[0]
    n = values.shape[0]
    _zero_kernel[(nbins + THREADS - 1) // THREADS, THREADS](counts)
    if n > 0:
        blocks = min((n + THREADS - 1) // THREADS, MAX_BLOCKS)
        if nbins <= SHARED_BINS:
            _shared_hist_kernel[blocks, THREADS](values, counts)
        else:
            _global_hist_kernel[blocks, THREADS](values, counts)
    if host_out is not None:
        counts.copy_to_host(host_out)
