"""py-vector-add's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). float32 addition is correctly rounded, so numpy's a + b is exact."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes


def draw(rng, n):
    return (rng.standard_normal(n) * 100).astype(np.float32)


def perf_cases(rng):
    n = 4099 if SIM else 1 << 23
    iters = 2 if SIM else 8
    return [Case("perf", {"a": draw(rng, n), "b": draw(rng, n), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    sizes = [0, 1, 5, 255, 256, 257, 1000, 3001] + ([] if SIM else [1 << 20, 10_000_019])
    return [Case(f"n{n}", {"a": draw(rng, n), "b": draw(rng, n)}) for n in sizes]


def check(case, out):
    a, b = case["a"], case["b"]
    ref = a + b
    if case.name == "perf":
        outs = [f"out{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_out", "device_out"]
    found = [m for name in outs for m in exact(out.array(name, np.float32, a.shape), ref, name)]
    if case.name != "perf":  # the host inputs must come back unchanged
        found += exact(out.array("host_a", np.float32, a.shape), a, "a (modified by the call)")
        found += exact(out.array("host_b", np.float32, b.shape), b, "b (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
