"""Hidden harness for py-stencil-1d: zero-padded 1-D weighted stencil (float32)."""

import contextlib
import os
import sys
import warnings

TOKEN = os.environ.pop("CUDAENV_COMPLETION_TOKEN", "")

import numpy as np
from numba import config as numba_config
from numba import cuda
from numba.core.errors import NumbaPerformanceWarning

try:
    import nvtx

    def bench_region():
        return nvtx.annotate("bench_region")
except ImportError:  # simulator-only environments may lack nvtx

    def bench_region():
        return contextlib.nullcontext()


warnings.simplefilter("ignore", NumbaPerformanceWarning)
sys.path.insert(0, os.getcwd())
import solution  # noqa: E402

SIM = bool(numba_config.ENABLE_CUDASIM)
PERF = "--perf" in sys.argv[1:]
failures = []


def inputs(n, radius, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, 2 * radius + 1).astype(np.float32)
    return x, w


def reference(x, w):
    n, taps = x.size, w.size
    r = (taps - 1) // 2
    xp = np.pad(x.astype(np.float64), r)
    w64 = w.astype(np.float64)
    ref = np.zeros(n)
    mag = np.zeros(n)
    for k in range(taps):
        seg = xp[k : k + n]
        ref += w64[k] * seg
        mag += np.abs(w64[k] * seg)
    return ref, mag


def check(tag, got, ref, mag):
    # Tolerance 1e-5 * sum_k |w_k * x_{i+k-R}| (float64 reference): at most 33 float32 terms,
    # whose worst-case rounding error is 33 * 2^-24 (~2e-6) of that magnitude.
    if got.shape != ref.shape:
        failures.append(f"{tag}: output shape {got.shape}")
        return False
    bad = ~(np.abs(got.astype(np.float64) - ref) <= 1e-5 * mag)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        failures.append(
            f"{tag}: {int(bad.sum())} wrong, first out[{i}] = {got[i]!r}, expected {ref[i]!r}"
        )
        return False
    return True


def run_tests():
    cases = [(0, 2), (1, 0), (5, 3), (300, 1), (257, 2), (700, 16), (40, 16)]
    if not SIM:
        cases += [((1 << 20) + 3, 8), (10_000_019, 16), (123_457, 0)]
    for idx, (n, radius) in enumerate(cases):
        x, w = inputs(n, radius, 500 + idx)
        ref, mag = reference(x, w)
        x0, w0 = x.copy(), w.copy()
        tag = f"n={n} R={radius}"
        out = np.full(n, np.nan, dtype=np.float32)
        solution.stencil_1d(x, w, out)
        ok = check(f"host {tag}", out, ref, mag)
        if not (np.array_equal(x, x0) and np.array_equal(w, w0)):
            failures.append(f"host {tag}: inputs were modified")
            ok = False
        dx, dw = cuda.to_device(x0), cuda.to_device(w0)
        dout = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        solution.stencil_1d(dx, dw, dout)
        cuda.synchronize()
        ok = check(f"device {tag}", dout.copy_to_host(), ref, mag) and ok
        print(("ok  " if ok else "BAD ") + tag)


def run_perf():
    n = 600 if SIM else 1 << 25
    radius = 16
    iters = 2 if SIM else 10
    x, w = inputs(n, radius, 17)
    ref, mag = reference(x, w)
    dx, dw = cuda.to_device(x), cuda.to_device(w)
    nan = np.full(n, np.nan, dtype=np.float32)
    outs = [cuda.to_device(nan) for _ in range(iters)]
    warm = cuda.device_array(n, dtype=np.float32)
    for _ in range(3):
        solution.stencil_1d(dx, dw, warm)
    cuda.synchronize()
    with bench_region():
        for o in outs:
            solution.stencil_1d(dx, dw, o)
        cuda.synchronize()
    for k, o in enumerate(outs):
        check(f"perf call {k}", o.copy_to_host(), ref, mag)
    print(f"perf n={n} R={radius} x{iters} done")


if PERF:
    run_perf()
else:
    run_tests()
if failures:
    for f in failures:
        print("FAIL", f)
    sys.exit(1)
print("all checks passed")
print(f"CUDAENV_COMPLETE {TOKEN}")
