"""layernorm-rows's checker: draws every run's matrices and decides on the normalised rows the
runner wrote (trusted: it never sees solution code).
y[r][j] = (x[r][j] - mean_r) / sqrt(var_r + eps) * gamma[j] + beta[j], var biased."""

import numpy as np
from cudaenv_check import Case, close, exact, guard, main

GUARD = 64  # poisoned floats after y: the solution must not write them
# |y - exact| <= 1e-3 * (1 + |exact|), exact computed in double from the float inputs. With
# |mean| <= 1000 and std >= 1, a float two-pass (or Welford) computation with tree reductions
# is off by ~1e-4 at most (x - mean alone carries ~3e-5). The one-pass formula E[x^2] - E[x]^2
# in float loses the variance to cancellation on offset rows (errors of several percent), and
# an unbiased (1/(cols-1)) variance or a misplaced eps is caught by the short rows and by the
# eps = 0.1 case.
TOL = 1e-3
# rows, cols: from 50001 x 3 to 1 x 262144
SHAPES = [
    (1, 1), (1, 2), (3, 7), (8, 32), (5, 33), (100, 768), (33, 1000), (7, 4097), (3000, 100),
    (2, 65536), (1, 262144), (50001, 3),
]  # fmt: skip


def uniform(rng, lo, hi, shape):
    return (lo + (hi - lo) * rng.random(shape)).astype(np.float32)


def matrix(rng, rows, cols, kind):
    """centered: uniform in [-1.7, 1.7); constant: all 2.0; offset: each row a large offset
    (|mean| up to 1000) plus a spread whose population standard deviation is at least 1."""
    if kind == "constant":
        return np.full((rows, cols), 2.0, dtype=np.float32)
    if kind == "centered":
        return uniform(rng, -1.7, 1.7, (rows, cols))
    x = np.empty((rows, cols), dtype=np.float32)
    redo = np.arange(rows)
    while redo.size:
        off = uniform(rng, -1000.0, 1000.0, (redo.size, 1))
        scale = uniform(rng, 1.8, 5.0, (redo.size, 1))
        x[redo] = off + scale * uniform(rng, -1.7, 1.7, (redo.size, cols))
        if cols < 2:
            break
        # short rows can fall below the promised spread by chance: draw them again
        redo = redo[x[redo].astype(np.float64).var(axis=1) < 1.0]
    return x


def params(rng, cols, eps):
    gamma, beta = uniform(rng, 0.5, 1.5, cols), uniform(rng, -1.0, 1.0, cols)
    return {"gamma": gamma, "beta": beta, "eps": np.float32(eps), "guard": np.int32(GUARD)}


def case(name, rng, rows, cols, kind, eps=1e-5):
    return Case(name, {"x": matrix(rng, rows, cols, kind), **params(rng, cols, eps)})


def perf_case(rng, rows, cols, R):
    x = matrix(rng, rows + R - 1, cols, "offset")
    inputs = {"x": x, "rows": np.int32(rows), "calls": np.int32(R)}
    return Case("perf", {**inputs, **params(rng, cols, 1e-5)})


def perf_cases(rng):
    rows = 4096
    cols = 4096
    R = 5  # timed calls, call r on rows r .. r + rows - 1, each with its own y
    return [perf_case(rng, rows, cols, R)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = [case("empty-0x8", rng, 0, 8, "centered")]
    out += [case(f"centered-{r}x{c}", rng, r, c, "centered") for r, c in SHAPES]
    out += [case(f"offset-{r}x{c}", rng, r, c, "offset") for r, c in SHAPES]
    out.append(case("constant-4x999", rng, 4, 999, "constant"))
    out.append(case("eps-0.1-16x300", rng, 16, 300, "centered", eps=0.1))
    return out


def normalised(x, gamma, beta, eps):
    """The exact rows in float64: two passes (mean, then squared deviations)."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True) if x.size else np.zeros((len(x), 1))
    d = x64 - mean
    var = (d * d).mean(axis=1, keepdims=True) if x.size else np.zeros((len(x), 1))
    return d / np.sqrt(var + float(eps)) * gamma.astype(np.float64) + beta.astype(np.float64)


def expect_y(got, x, case, what):
    n, pad = x.size, int(case["guard"])
    want = normalised(x, case["gamma"], case["beta"], case["eps"]).reshape(-1)
    found = close(got[:n], want, what, atol=TOL, rtol=TOL)
    return found + guard(got[n : n + pad], f"{what} past the end")


def check(case, out):
    x, pad = case["x"], int(case["guard"])
    if case.name == "perf":
        rows, found = int(case["rows"]), []
        for r in range(int(case["calls"])):
            got = out.array(f"y{r}", np.float32, (rows * x.shape[1] + pad,))
            found += expect_y(got, x[r : r + rows], case, f"y{r}")
        return found
    found = expect_y(out.array("y", np.float32, (x.size + pad,)), x, case, "y")
    for name in ("x", "gamma", "beta"):  # the inputs must come back unchanged
        after = out.array(f"{name}_after", np.float32, case[name].shape)
        found += exact(after, case[name], f"{name} (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
