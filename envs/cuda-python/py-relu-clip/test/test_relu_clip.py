"""Hidden harness for py-relu-clip: fused threshold-ReLU with an upper clip (float32). The solution runs in a
child process (pychild.py); this process never imports it and only compares what it returns."""

import sys

from pychild import Out, SolutionProcess, bench_seed, simulator, take_token

TOKEN = take_token()

import numpy as np  # noqa: E402

SIM = simulator()
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


def run_tests(sol):
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
        out = Out(np.full(n, np.nan, dtype=np.float32))
        x1, got = sol.call([x, lo, hi, out], device=False).arrays
        ok = check(f"host {tag}", got, ref)
        if not np.array_equal(x1, x0):
            failures.append(f"host {tag}: input was modified")
            ok = False
        _, got = sol.call([x0, lo, hi, out], device=True).arrays
        ok = check(f"device {tag}", got, ref) and ok
        print(("ok  " if ok else "BAD ") + tag)


def run_perf(sol):
    n = 2000 if SIM else 1 << 25
    iters = 2 if SIM else 10
    lo, hi = 0.5, 6.0
    x = inputs(n, lo, hi, bench_seed(21))
    ref = reference(x, lo, hi)
    nan = Out(np.full(n, np.nan, dtype=np.float32))
    # the child uploads everything, warms up, then times all calls in one bench_region
    results = sol.bench([[x, lo, hi, nan] for _ in range(iters)], warm=[x, lo, hi, nan])
    for k, r in enumerate(results):
        check(f"perf call {k}", r.arrays[0], ref)
    print(f"perf n={n} x{iters} done")


with SolutionProcess("relu_clip") as sol:
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
