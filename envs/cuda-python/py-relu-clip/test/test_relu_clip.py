"""Hidden harness for py-relu-clip: fused threshold-ReLU with an upper clip (float32)."""

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


def inputs(n, lo, hi, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4.0).astype(np.float32)
    if n >= 8:  # values exactly on and next to the thresholds
        lo32, hi32 = np.float32(lo), np.float32(hi)
        x[:8] = [
            lo32,
            hi32,
            np.nextafter(lo32, np.float32(np.inf)),
            np.nextafter(hi32, np.float32(-np.inf)),
            np.nextafter(hi32, np.float32(np.inf)),
            -0.0,
            0.0,
            -1e30,
        ]
        rng.shuffle(x)
    return x


def reference(x, lo, hi):
    lo32, hi32 = np.float32(lo), np.float32(hi)
    return np.where(x <= lo32, np.float32(0.0), np.minimum(x, hi32)).astype(np.float32)


def check(tag, got, ref):
    # Comparisons and selections only: the result must be exact.
    if got.shape != ref.shape or not np.array_equal(got, ref):
        if got.shape == ref.shape:
            bad = np.flatnonzero(~(got == ref))
            i = int(bad[0])
            failures.append(
                f"{tag}: {bad.size} wrong, first out[{i}] = {got[i]!r}, expected {ref[i]!r}"
            )
        else:
            failures.append(f"{tag}: output shape {got.shape}")
        return False
    return True


def run_tests():
    cases = [
        (0, 0.0, 6.0),
        (1, 0.0, 6.0),
        (9, 0.5, 1.0),
        (257, 0.0, 6.0),
        (1000, 0.25, 3.5),
        (3001, 1.0, 2.0**90),
        (600, 0.0, 0.125),
    ]
    if not SIM:
        cases += [((1 << 20) + 1, 0.0, 6.0), (10_000_019, 0.75, 2.5)]
    for idx, (n, lo, hi) in enumerate(cases):
        x = inputs(n, lo, hi, 700 + idx)
        ref = reference(x, lo, hi)
        x0 = x.copy()
        tag = f"n={n} lo={lo} hi={hi}"
        out = np.full(n, np.nan, dtype=np.float32)
        solution.relu_clip(x, lo, hi, out)
        ok = check(f"host {tag}", out, ref)
        if not np.array_equal(x, x0):
            failures.append(f"host {tag}: input was modified")
            ok = False
        dx = cuda.to_device(x0)
        dout = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        solution.relu_clip(dx, lo, hi, dout)
        cuda.synchronize()
        ok = check(f"device {tag}", dout.copy_to_host(), ref) and ok
        print(("ok  " if ok else "BAD ") + tag)


def run_perf():
    n = 2000 if SIM else 1 << 25
    iters = 2 if SIM else 10
    lo, hi = 0.5, 6.0
    x = inputs(n, lo, hi, 21)
    ref = reference(x, lo, hi)
    dx = cuda.to_device(x)
    nan = np.full(n, np.nan, dtype=np.float32)
    outs = [cuda.to_device(nan) for _ in range(iters)]
    warm = cuda.device_array(n, dtype=np.float32)
    for _ in range(3):
        solution.relu_clip(dx, lo, hi, warm)
    cuda.synchronize()
    with bench_region():
        for o in outs:
            solution.relu_clip(dx, lo, hi, o)
        cuda.synchronize()
    for k, o in enumerate(outs):
        check(f"perf call {k}", o.copy_to_host(), ref)
    print(f"perf n={n} x{iters} done")


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
