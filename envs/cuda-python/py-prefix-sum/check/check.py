"""py-prefix-sum's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). An integer inclusive scan: exact."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes

SIZES = [0, 1, 5, 257, 900]
LARGE = [256, 1000, 65_536, 65_537, (1 << 20) + 7, 20_000_003]


def signed(rng, n):
    """Values in [-1000, 1000]: no prefix of up to 2e7 of them leaves the int32 range."""
    return rng.integers(-1000, 1001, n).astype(np.int32)


def perf_cases(rng):
    n = 500 if SIM else 1 << 24
    iters = 2 if SIM else 4
    return [Case("perf", {"x": signed(rng, n), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    made = [Case(f"n{n}", {"x": signed(rng, n)}) for n in SIZES + ([] if SIM else LARGE)]
    made.append(Case("ones-300", {"x": np.ones(300, np.int32)}))
    if not SIM:  # positive values in [0, 700): prefixes up to 2.1e9, just inside int32
        made.append(Case("positive-3M", {"x": rng.integers(0, 700, 3_000_000).astype(np.int32)}))
    return made


def check(case, out):
    x = case["x"]
    ref = np.cumsum(x, dtype=np.int64)
    assert ref.size == 0 or (ref.min() >= -(2**31) and ref.max() < 2**31), "inputs overflow"
    if case.name == "perf":
        outs = [f"out{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_out", "device_out"]
    found = [m for name in outs for m in exact(out.array(name, np.int32, x.shape), ref, name)]
    if case.name != "perf":  # the inputs (host and device) must come back unchanged
        for name in ("host_x", "device_x"):
            found += exact(out.array(name, np.int32, x.shape), x, f"{name} (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
