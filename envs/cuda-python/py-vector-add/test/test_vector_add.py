"""Hidden harness for py-vector-add: out = a + b (float32). The solution runs in a child
process (pychild.py); this process never imports it and only compares the arrays it returns."""

import sys

from pychild import Out, SolutionProcess, bench_seed, simulator, take_token

TOKEN = take_token()

import numpy as np  # noqa: E402

SIM = simulator()
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


def run_tests(sol):
    sizes = [0, 1, 5, 255, 256, 257, 1000, 3001]
    if not SIM:
        sizes += [1 << 20, 10_000_019]
    for idx, n in enumerate(sizes):
        a, b = inputs(n, 100 + idx)
        a0, b0 = a.copy(), b.copy()
        garbage = Out(np.full(n, np.nan, dtype=np.float32))
        # host (numpy) arrays
        a1, b1, out = sol.call([a, b, garbage], device=False).arrays
        ok = check(f"host n={n}", out, a0, b0)
        if not (np.array_equal(a1, a0) and np.array_equal(b1, b0)):
            failures.append(f"host n={n}: inputs were modified")
            ok = False
        # device arrays
        _, _, dout = sol.call([a0, b0, garbage], device=True).arrays
        ok = check(f"device n={n}", dout, a0, b0) and ok
        print(("ok  " if ok else "BAD ") + f"n={n}")


def run_perf(sol):
    n = 4099 if SIM else 1 << 25
    iters = 2 if SIM else 10
    a, b = inputs(n, bench_seed(7))
    nan = Out(np.full(n, np.nan, dtype=np.float32))
    # the child uploads everything, warms up, then times all calls in one bench_region
    results = sol.bench([[a, b, nan] for _ in range(iters)], warm=[a, b, nan])
    for k, r in enumerate(results):
        check(f"perf call {k}", r.arrays[0], a, b)
    print(f"perf n={n} x{iters} done")


with SolutionProcess("vector_add") as sol:
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
