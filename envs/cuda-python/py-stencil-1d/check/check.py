"""py-stencil-1d's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). out[i] = sum_k w[k] x[i + k - R], zero padded, in float32."""

import numpy as np
from cudaenv_check import Case, close, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes
RTOL = 1e-5  # of sum_k |w_k x_{i+k-R}| (see expect_out)

# (n, R): n below R, R = 0, sizes past a block, the largest radius
TESTS = [(0, 2), (1, 0), (5, 3), (300, 1), (257, 2), (700, 16), (40, 16)]
LARGE = [((1 << 20) + 3, 8), (10_000_019, 16), (123_457, 0)]


def inputs(rng, n, radius):
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, 2 * radius + 1).astype(np.float32)
    return {"x": x, "weights": w}


def perf_cases(rng):
    n = 600 if SIM else 1 << 23
    radius = 16
    iters = 2 if SIM else 8
    return [Case("perf", {**inputs(rng, n, radius), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    tests = TESTS + ([] if SIM else LARGE)
    return [Case(f"n{n}-r{radius}", inputs(rng, n, radius)) for n, radius in tests]


def reference(x, w):
    """The float64 stencil and sum_k |w_k x_{i+k-R}|, the scale of its rounding error."""
    n, taps = x.size, w.size
    r = (taps - 1) // 2
    xp = np.pad(x.astype(np.float64), r)
    w64 = w.astype(np.float64)
    ref, mag = np.zeros(n), np.zeros(n)
    for k in range(taps):
        seg = xp[k : k + n]
        ref += w64[k] * seg
        mag += np.abs(w64[k] * seg)
    return ref, mag


def expect_out(got, ref, mag, what):
    """Within 1e-5 * sum_k |w_k x_{i+k-R}| of the float64 value: at most 33 float32 terms,
    whose worst-case rounding error is 33 * 2^-24 (~2e-6) of that magnitude."""
    return close(got, ref, what, tol=RTOL * mag)


def check(case, out):
    x, w = case["x"], case["weights"]
    ref, mag = reference(x, w)
    if case.name == "perf":
        outs = [f"out{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_out", "device_out"]
    found = []
    for name in outs:
        found += expect_out(out.array(name, np.float32, x.shape), ref, mag, name)
    if case.name != "perf":  # the host inputs must come back unchanged
        found += exact(out.array("host_x", np.float32, x.shape), x, "x (modified by the call)")
        got = out.array("host_weights", np.float32, w.shape)
        found += exact(got, w, "weights (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
