"""Hidden harness for py-histogram: integer histogram with atomics. The solution runs in a
child process (pychild.py); this process never imports it and only compares what it returns."""

import sys

from pychild import Out, SolutionProcess, bench_seed, simulator, take_token

TOKEN = take_token()

import numpy as np  # noqa: E402

SIM = simulator()
PERF = "--perf" in sys.argv[1:]
failures = []


def check(tag, got, values, nbins):
    # Counting is exact: the histogram must equal np.bincount exactly.
    ref = np.bincount(values, minlength=nbins).astype(np.int64)
    if got.shape != (nbins,) or not np.array_equal(got.astype(np.int64), ref):
        if got.shape == (nbins,):
            b = int(np.flatnonzero(got != ref)[0])
            failures.append(f"{tag}: counts[{b}] = {got[b]}, expected {ref[b]}")
        else:
            failures.append(f"{tag}: counts has shape {got.shape}")
        return False
    return True


def make_cases():
    rng = np.random.default_rng(20261129)
    cases = [
        ("empty", np.zeros(0, np.int32), 10),
        ("single", np.zeros(1, np.int32), 1),
        ("uniform", rng.integers(0, 256, 1000).astype(np.int32), 256),
        (
            "skewed",
            np.where(rng.random(1500) < 0.9, 3, rng.integers(0, 7, 1500)).astype(np.int32),
            7,
        ),
        ("all-last-bin", np.full(700, 99, np.int32), 100),
        ("2048-bins", rng.integers(0, 2048, 600).astype(np.int32), 2048),
        ("3000-bins", rng.integers(0, 3000, 900).astype(np.int32), 3000),
    ]
    if not SIM:
        cases += [
            ("10M-256", rng.integers(0, 256, 10_000_019).astype(np.int32), 256),
            ("5M-100000", rng.integers(0, 100_000, 5_000_000).astype(np.int32), 100_000),
            ("3M-1bin", np.zeros(3_000_001, np.int32), 1),
            ("4M-skewed", (rng.random(4_000_000) ** 4 * 1000).astype(np.int32), 1000),
        ]
    return cases


def run_tests(sol):
    for tag, values, nbins in make_cases():
        v0 = values.copy()
        counts = Out(np.full(nbins, 12345, dtype=np.int32))  # garbage that must be overwritten
        values1, got = sol.call([values, counts], device=False).arrays
        ok = check(f"host {tag}", got, v0, nbins)
        if not np.array_equal(values1, v0):
            failures.append(f"host {tag}: values were modified")
            ok = False
        dc = Out(np.full(nbins, -7, dtype=np.int32))
        _, got = sol.call([v0, dc], device=True).arrays
        ok = check(f"device {tag}", got, v0, nbins) and ok
        print(("ok  " if ok else "BAD ") + f"{tag} (n={v0.size}, bins={nbins})")


def run_perf(sol):
    n = 1000 if SIM else 1 << 26
    nbins = 256
    iters = 2 if SIM else 10
    rng = np.random.default_rng(bench_seed(3))
    values = (rng.random(n) ** 2 * nbins).astype(np.int32)  # skewed towards low bins
    garbage = Out(np.full(nbins, -1, dtype=np.int32))
    # the child uploads everything, warms up, then times all calls in one bench_region
    results = sol.bench([[values, garbage] for _ in range(iters)], warm=[values, garbage])
    for k, r in enumerate(results):
        check(f"perf call {k}", r.arrays[0], values, nbins)
    print(f"perf n={n} bins={nbins} x{iters} done")


with SolutionProcess("histogram") as sol:
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
