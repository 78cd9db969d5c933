"""py-relu-clip's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). out = 0 where x <= lo, hi where x >= hi, x elsewhere: comparisons and
selections only, so the answer is exact."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes

# (n, lo, hi): lo and hi exactly representable in float32, 0 <= lo < hi
TESTS = [
    (0, 0.0, 6.0),
    (1, 0.0, 6.0),
    (9, 0.5, 1.0),
    (257, 0.0, 6.0),
    (1000, 0.25, 3.5),
    (3001, 1.0, 2.0**90),
    (600, 0.0, 0.125),
]
LARGE = [((1 << 20) + 1, 0.0, 6.0), (10_000_019, 0.75, 2.5)]


def draw(rng, n, lo, hi):
    """Normal values (scale 4), with the values on and next to the thresholds, signed zeros
    and a huge negative planted at random places when n >= 8."""
    x = (rng.standard_normal(n) * 4.0).astype(np.float32)
    if n >= 8:
        lo32, hi32 = np.float32(lo), np.float32(hi)
        up, down = np.float32(np.inf), np.float32(-np.inf)
        special = [lo32, hi32, np.nextafter(lo32, up), np.nextafter(hi32, down)]
        special += [np.nextafter(hi32, up), np.float32(-0.0), np.float32(0.0), np.float32(-1e30)]
        x[rng.choice(n, len(special), replace=False)] = special
    return x


def case(name, rng, n, lo, hi, **extra):
    x = draw(rng, n, lo, hi)
    return Case(name, {"x": x, "lo": np.float64(lo), "hi": np.float64(hi), **extra})


def perf_cases(rng):
    n = 2000 if SIM else 1 << 23
    iters = 2 if SIM else 8
    return [case("perf", rng, n, 0.5, 6.0, iters=np.int64(iters))]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    tests = TESTS + ([] if SIM else LARGE)
    return [case(f"n{n}", rng, n, lo, hi) for n, lo, hi in tests]


def reference(x, lo, hi):
    lo32, hi32 = np.float32(lo), np.float32(hi)
    return np.where(x <= lo32, np.float32(0.0), np.minimum(x, hi32)).astype(np.float32)


def check(case, out):
    x = case["x"]
    ref = reference(x, case["lo"], case["hi"])
    if case.name == "perf":
        outs = [f"out{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_out", "device_out"]
    found = [m for name in outs for m in exact(out.array(name, np.float32, x.shape), ref, name)]
    if case.name != "perf":  # the host input must come back unchanged
        found += exact(out.array("host_x", np.float32, x.shape), x, "x (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
