import numpy as np
from numba import cuda

THREADS = 256


@cuda.jit
def _zero_kernel(counts):
    i = cuda.grid(1)
    if i < counts.shape[0]:
        counts[i] = 0


@cuda.jit
def _atomic_hist_kernel(values, counts):
    # Deliberately naive: one thread per value, one global atomic each.
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(counts, values[i], 1)


def histogram(values, counts):
    host_out = None
    if isinstance(counts, np.ndarray):
        host_out = counts
        values = cuda.to_device(values)
        counts = cuda.to_device(host_out)
    nbins = counts.shape[0]
    n = values.shape[0]
    _zero_kernel[(nbins + THREADS - 1) // THREADS, THREADS](counts)
    if n > 0:
        _atomic_hist_kernel[(n + THREADS - 1) // THREADS, THREADS](values, counts)
    if host_out is not None:
        counts.copy_to_host(host_out)
