"""Hidden harness for py-stencil-1d: zero-padded 1-D weighted stencil (float32). The solution runs in a
child process (pychild.py); this process never imports it and only compares what it returns."""

import sys

from pychild import Out, SolutionProcess, bench_seed, simulator, take_token

TOKEN = take_token()

import numpy as np  # noqa: E402

SIM = simulator()
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


def run_tests(sol):
    cases = [(0, 2), (1, 0), (5, 3), (300, 1), (257, 2), (700, 16), (40, 16)]
    if not SIM:
        cases += [((1 << 20) + 3, 8), (10_000_019, 16), (123_457, 0)]
    for idx, (n, radius) in enumerate(cases):
        x, w = inputs(n, radius, 500 + idx)
        ref, mag = reference(x, w)
        x0, w0 = x.copy(), w.copy()
        tag = f"n={n} R={radius}"
        out = Out(np.full(n, np.nan, dtype=np.float32))
        x1, w1, got = sol.call([x, w, out], device=False).arrays
        ok = check(f"host {tag}", got, ref, mag)
        if not (np.array_equal(x1, x0) and np.array_equal(w1, w0)):
            failures.append(f"host {tag}: inputs were modified")
            ok = False
        _, _, got = sol.call([x0, w0, out], device=True).arrays
        ok = check(f"device {tag}", got, ref, mag) and ok
        print(("ok  " if ok else "BAD ") + tag)


def run_perf(sol):
    n = 600 if SIM else 1 << 25
    radius = 16
    iters = 2 if SIM else 10
    x, w = inputs(n, radius, bench_seed(17))
    ref, mag = reference(x, w)
    nan = Out(np.full(n, np.nan, dtype=np.float32))
    # the child uploads everything, warms up, then times all calls in one bench_region
    results = sol.bench([[x, w, nan] for _ in range(iters)], warm=[x, w, nan])
    for k, r in enumerate(results):
        check(f"perf call {k}", r.arrays[0], ref, mag)
    print(f"perf n={n} R={radius} x{iters} done")


with SolutionProcess("stencil_1d") as sol:
    if PERF:
        run_perf(sol)
    else:
        run_tests(sol)
if failures:
    for f in failures:
        print("FAIL", f)
    sys.exit(1)
print("all checks passed")
print(f"CUDAENV_COMPLETE {TOKEN}")
