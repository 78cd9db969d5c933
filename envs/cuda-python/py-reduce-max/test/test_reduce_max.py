"""Hidden harness for py-reduce-max: maximum of a float32 array."""

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


def check(tag, got, x):
    # The maximum is an exact operation: the result must equal np.max bit for bit.
    expected = float(np.max(x)) if x.size else float("-inf")
    try:
        got = float(got)
    except (TypeError, ValueError):
        failures.append(f"{tag}: returned {got!r}, not a number")
        return False
    if got != expected:
        failures.append(f"{tag}: got {got!r}, expected {expected!r}")
        return False
    return True


def make_cases():
    rng = np.random.default_rng(20261129)
    cases = [
        ("empty", np.zeros(0, np.float32)),
        ("single", np.array([-3.5], np.float32)),
        ("all-negative", -np.abs(rng.standard_normal(300)).astype(np.float32) - 1.0),
    ]
    v = rng.standard_normal(600).astype(np.float32)
    v[0] = 50.0
    cases.append(("max-first", v))
    v = rng.standard_normal(1025).astype(np.float32)
    v[-1] = 1e30
    cases.append(("max-last", v))
    cases.append(("constant", np.full(513, 2.25, np.float32)))
    n_big = 1500 if SIM else 300_001
    cases.append((f"uniform-{n_big}", rng.uniform(-1e6, 1e6, n_big).astype(np.float32)))
    if not SIM:
        cases.append(("normal-1M+1", rng.standard_normal((1 << 20) + 1).astype(np.float32)))
        v = rng.uniform(-1.0, 0.0, 20_000_003).astype(np.float32)
        v[12_345_677] = 0.5
        cases.append(("planted-20M", v))
    return cases


def run_tests():
    for tag, x in make_cases():
        x0 = x.copy()
        ok = check(f"host {tag}", solution.reduce_max(x), x0)
        if not np.array_equal(x, x0):
            failures.append(f"host {tag}: input was modified")
            ok = False
        dx = cuda.to_device(x0)
        ok = check(f"device {tag}", solution.reduce_max(dx), x0) and ok
        if not np.array_equal(dx.copy_to_host(), x0):
            failures.append(f"device {tag}: input was modified")
            ok = False
        print(("ok  " if ok else "BAD ") + f"{tag} (n={x0.size})")


def run_perf():
    n = 1000 if SIM else 1 << 25
    iters = 2 if SIM else 8
    rng = np.random.default_rng(5)
    base = rng.standard_normal(n).astype(np.float32)
    arrays = []
    for k in range(iters):  # a distinct input (different planted maximum) for every timed call
        pos = int(rng.integers(0, n))
        saved = base[pos]
        base[pos] = np.float32(10.0 + k)
        arrays.append(cuda.to_device(base))
        base[pos] = saved
    warm = cuda.to_device(base)
    for _ in range(3):
        solution.reduce_max(warm)
    cuda.synchronize()
    results = []
    with bench_region():
        for d in arrays:
            results.append(solution.reduce_max(d))
        cuda.synchronize()
    for k, r in enumerate(results):
        want = float(np.float32(10.0 + k))
        if not isinstance(r, (float, np.floating)) or float(r) != want:
            failures.append(f"perf call {k}: got {r!r}, expected {want!r}")
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
