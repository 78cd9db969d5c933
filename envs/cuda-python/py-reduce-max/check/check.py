"""py-reduce-max's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). The maximum is exact: the returned float must equal numpy's max (and
-inf for an empty array)."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes


def planted(values, index, value):
    values[index] = value
    return values


N_UNIFORM = 1500 if SIM else 300_001
# name -> values from rng (finite float32)
TESTS = {
    "empty": lambda rng: np.zeros(0, np.float32),
    "single": lambda rng: np.array([-3.5], np.float32),
    "all-negative": lambda rng: -np.abs(rng.standard_normal(300)).astype(np.float32) - 1,
    "max-first": lambda rng: planted(rng.standard_normal(600).astype(np.float32), 0, 50),
    "max-last": lambda rng: planted(rng.standard_normal(1025).astype(np.float32), -1, 1e30),
    "constant": lambda rng: np.full(513, 2.25, np.float32),
    f"uniform-{N_UNIFORM}": lambda rng: rng.uniform(-1e6, 1e6, N_UNIFORM).astype(np.float32),
}
LARGE = {
    "normal-1M-plus-1": lambda rng: rng.standard_normal((1 << 20) + 1).astype(np.float32),
    "planted-20M": lambda rng: planted(
        rng.uniform(-1.0, 0.0, 20_000_003).astype(np.float32), rng.integers(20_000_003), 0.5
    ),
}


def perf_cases(rng):
    """One base array; timed call k gets it with 10 + k planted at its own random place (a
    distinct input and answer per call, built by the runner outside the timed region)."""
    n = 1000 if SIM else 1 << 25
    iters = 2 if SIM else 8
    base = rng.standard_normal(n).astype(np.float32)
    pos = rng.integers(0, n, iters)
    value = (10.0 + np.arange(iters)).astype(np.float32)
    return [Case("perf", {"base": base, "pos": pos, "value": value})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    tests = {**TESTS, **({} if SIM else LARGE)}
    return [Case(name, {"x": make(rng)}) for name, make in tests.items()]


def maximum(x):
    return np.float64(np.max(x)) if x.size else np.float64(-np.inf)


def check(case, out):
    if case.name == "perf":
        base, found = case["base"], []
        for k, (p, v) in enumerate(zip(case["pos"].tolist(), case["value"])):
            want = maximum(planted(base.copy(), p, v))
            found += exact(out.array(f"max{k}", np.float64, ()), want, f"max{k}")
        return found
    x = case["x"]
    found = []
    for side in ("host", "device"):
        found += exact(out.array(f"{side}_max", np.float64, ()), maximum(x), f"{side}_max")
        got = out.array(f"{side}_x", np.float32, x.shape)
        found += exact(got, x, f"{side}_x (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
