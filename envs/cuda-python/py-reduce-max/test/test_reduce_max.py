"""Hidden harness for py-reduce-max: maximum of a float32 array. The solution runs in a
child process (pychild.py); this process never imports it and only compares what it returns."""

import sys

from pychild import Out, SolutionProcess, bench_seed, simulator, take_token

TOKEN = take_token()

import numpy as np  # noqa: E402

SIM = simulator()
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


def run_tests(sol):
    for tag, x in make_cases():
        x0 = x.copy()
        r = sol.call([x], device=False)
        ok = check(f"host {tag}", r.value, x0)
        if not np.array_equal(r.arrays[0], x0):
            failures.append(f"host {tag}: input was modified")
            ok = False
        r = sol.call([x0], device=True)
        ok = check(f"device {tag}", r.value, x0) and ok
        if not np.array_equal(r.arrays[0], x0):
            failures.append(f"device {tag}: input was modified")
            ok = False
        print(("ok  " if ok else "BAD ") + f"{tag} (n={x0.size})")


def run_perf(sol):
    n = 1000 if SIM else 1 << 25
    iters = 2 if SIM else 8
    rng = np.random.default_rng(bench_seed(5))
    base = rng.standard_normal(n).astype(np.float32)
    arrays = []
    for k in range(iters):  # a distinct input (different planted maximum) for every timed call
        pos = int(rng.integers(0, n))
        saved = base[pos]
        base[pos] = np.float32(10.0 + k)
        arrays.append(base.copy())
        base[pos] = saved
    # the child uploads everything, warms up, then times all calls in one bench_region
    results = [r.value for r in sol.bench([[a] for a in arrays], warm=[base])]
    for k, r in enumerate(results):
        want = float(np.float32(10.0 + k))
        if not isinstance(r, (float, np.floating)) or float(r) != want:
            failures.append(f"perf call {k}: got {r!r}, expected {want!r}")
    print(f"perf n={n} x{iters} done")


with SolutionProcess("reduce_max") as sol:
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
