"""Hidden harness for py-vector-add: out = a + b (float32)."""

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


def inputs(n, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 100).astype(np.float32)
    b = (rng.standard_normal(n) * 100).astype(np.float32)
    return a, b


def check(tag, got, a, b):
    # float32 addition is correctly rounded, so numpy's float32 a + b is the exact answer.
    ref = a + b
    if got.shape != ref.shape or not np.array_equal(got, ref):
        bad = np.flatnonzero(got != ref) if got.shape == ref.shape else []
        i = int(bad[0]) if len(bad) else -1
        failures.append(
            f"{tag}: {len(bad)} wrong elements, first at {i}"
            + (f": got {got[i]!r}, expected {ref[i]!r}" if i >= 0 else "")
        )
        return False
    return True


def run_tests():
    sizes = [0, 1, 5, 255, 256, 257, 1000, 3001]
    if not SIM:
        sizes += [1 << 20, 10_000_019]
    for idx, n in enumerate(sizes):
        a, b = inputs(n, 100 + idx)
        a0, b0 = a.copy(), b.copy()
        # host (numpy) arrays
        out = np.full(n, np.nan, dtype=np.float32)
        solution.vector_add(a, b, out)
        ok = check(f"host n={n}", out, a0, b0)
        if not (np.array_equal(a, a0) and np.array_equal(b, b0)):
            failures.append(f"host n={n}: inputs were modified")
            ok = False
        # device arrays
        da, db = cuda.to_device(a0), cuda.to_device(b0)
        dout = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        solution.vector_add(da, db, dout)
        cuda.synchronize()
        ok = check(f"device n={n}", dout.copy_to_host(), a0, b0) and ok
        print(("ok  " if ok else "BAD ") + f"n={n}")


def run_perf():
    n = 4099 if SIM else 1 << 25
    iters = 2 if SIM else 10
    a, b = inputs(n, 7)
    da, db = cuda.to_device(a), cuda.to_device(b)
    nan = np.full(n, np.nan, dtype=np.float32)
    outs = [cuda.to_device(nan) for _ in range(iters)]
    warm = cuda.device_array(n, dtype=np.float32)
    for _ in range(3):
        solution.vector_add(da, db, warm)
    cuda.synchronize()
    with bench_region():
        for o in outs:
            solution.vector_add(da, db, o)
        cuda.synchronize()
    for k, o in enumerate(outs):
        check(f"perf call {k}", o.copy_to_host(), a, b)
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
