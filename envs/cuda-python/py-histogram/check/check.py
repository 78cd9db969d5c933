"""py-histogram's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). Counting is exact: counts must equal numpy's bincount."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes


def uniform(rng, n, nbins):
    return rng.integers(0, nbins, n).astype(np.int32)


def skewed(rng, n):
    """Seven bins, about 90% of the values in bin 3."""
    return np.where(rng.random(n) < 0.9, 3, rng.integers(0, 7, n)).astype(np.int32)


# name -> (values from rng, nbins)
TESTS = {
    "empty": (lambda rng: np.zeros(0, np.int32), 10),
    "single": (lambda rng: np.zeros(1, np.int32), 1),
    "uniform": (lambda rng: uniform(rng, 1000, 256), 256),
    "skewed": (lambda rng: skewed(rng, 1500), 7),
    "all-last-bin": (lambda rng: np.full(700, 99, np.int32), 100),
    "2048-bins": (lambda rng: uniform(rng, 600, 2048), 2048),
    "3000-bins": (lambda rng: uniform(rng, 900, 3000), 3000),
}
LARGE = {
    "10M-256": (lambda rng: uniform(rng, 10_000_019, 256), 256),
    "5M-100000": (lambda rng: uniform(rng, 5_000_000, 100_000), 100_000),
    "3M-1bin": (lambda rng: np.zeros(3_000_001, np.int32), 1),
    "4M-skewed": (lambda rng: (rng.random(4_000_000) ** 4 * 1000).astype(np.int32), 1000),
}


def perf_cases(rng):
    n = 1000 if SIM else 1 << 26
    nbins = 256
    iters = 2 if SIM else 10
    values = (rng.random(n) ** 2 * nbins).astype(np.int32)  # skewed towards low bins
    return [Case("perf", {"values": values, "nbins": np.int32(nbins), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    tests = {**TESTS, **({} if SIM else LARGE)}
    return [
        Case(name, {"values": make(rng), "nbins": np.int32(nbins)})
        for name, (make, nbins) in tests.items()
    ]


def check(case, out):
    values, nbins = case["values"], int(case["nbins"])
    ref = np.bincount(values, minlength=nbins)
    if case.name == "perf":
        outs = [f"counts{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_counts", "device_counts"]
    found = [m for name in outs for m in exact(out.array(name, np.int32, (nbins,)), ref, name)]
    if case.name != "perf":  # the host input must come back unchanged
        got = out.array("host_values", np.int32, values.shape)
        found += exact(got, values, "values (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
