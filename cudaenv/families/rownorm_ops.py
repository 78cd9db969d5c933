"""The rownorm family's one definition, shared by its C++ and Python renderings: the kinds
(softmax, log-softmax, layernorm, RMSNorm), the parameter space, formulas, tolerances, input
kinds, the test cases and the regimes of the benchmark's row length (the reference semantics
are ``refs/rownorm.py``)."""

from __future__ import annotations

from cudaenv.families.base import Listed, Params
from cudaenv.families.checks import Cases, tests

KINDS = ("softmax", "logsoftmax", "layernorm", "rmsnorm")
SCALES = (1.0, 2.0, 0.5)  # softmax(scale * x)
EPSILONS = (1e-5, 1e-6, 1e-3)
AFFINE = {"layernorm": ("none", "gamma", "gamma_beta"), "rmsnorm": ("none", "gamma")}
DTYPES = ("f32", "f64", "f16")
#: the benchmark's (rows, cols) by regime of the row length
REGIMES = {"short": (32768, 128), "medium": (4096, 1024), "long": (128, 32768)}
FN = {"softmax": "softmax_rows", "logsoftmax": "log_softmax_rows",
      "layernorm": "layer_norm_rows", "rmsnorm": "rms_norm_rows"}  # fmt: skip
SHAPES = [(0, 5), (1, 1), (1, 7), (3, 5), (2, 32), (5, 33), (64, 1000), (1000, 64), (17, 4099),
          (300, 2048), (4, 100003), (2, 262144), (4096, 1), (70001, 3)]  # fmt: skip
SIZES = ("rows", "cols")
SIM_SHAPES = [(0, 5), (1, 1), (3, 5), (2, 33), (4, 70)]  # Python, on numba-cuda's simulator
GPU_SHAPES = [(64, 1000), (1000, 64), (17, 4099), (4, 100003), (4096, 1), (70001, 3)]
SIM_PERF = (3, 37)
CALLS = 3  # timed calls, each on its own inputs and output
# input kinds (refs/rownorm.py): uniform in [-5, 5]; rows shifted by multiples of 1000 (exp
# overflows without the row maximum, even in double); rows around 4 (the mean matters);
# constant rows. The cases cycle through three of them by kind:
KIND_CASES = {"softmax": ("uniform", "shifted", "constant"),
              "logsoftmax": ("uniform", "shifted", "constant"),
              "layernorm": ("uniform", "offset", "constant"),
              "rmsnorm": ("uniform", "offset", "constant")}  # fmt: skip
#: relative tolerance by kind and accumulation type (see tolerance_text)
RTOL = {
    "softmax": {"float": 1e-4, "double": 1e-12},
    "logsoftmax": {"float": 5e-5, "double": 1e-12},
    "layernorm": {"float": 1e-3, "double": 1e-10},
    "rmsnorm": {"float": 1e-4, "double": 1e-12},
}


def _points() -> list[Params]:
    out: list[Params] = []
    for kind in KINDS:
        for dtype in DTYPES:
            for regime in REGIMES:
                if kind in ("softmax", "logsoftmax"):
                    for s in SCALES:
                        out.append({"kind": kind, "dtype": dtype, "regime": regime, "scale": s,
                                    "eps": 0.0, "affine": "none"})  # fmt: skip
                else:
                    for eps in EPSILONS:
                        for aff in AFFINE[kind]:
                            out.append({"kind": kind, "dtype": dtype, "regime": regime,
                                        "scale": 1.0, "eps": eps, "affine": aff})  # fmt: skip
    return out


def label(p: Params) -> str:
    extra = f"-{p['affine'].replace('_', '')}" if p["affine"] != "none" else ""
    return f"{p['kind']}-{p['regime']}-{p['dtype']}{extra}"


#: the family's parameter space (the Python rendering: float and double)
SPACE = Listed(_points, label)


def extras(p: Params) -> list[str]:
    return {"none": [], "gamma": ["gamma"], "gamma_beta": ["gamma", "beta"]}[p["affine"]]


def work(p: Params, size: int) -> dict:
    """``metadata.work``: every timed call reads ``x`` (and the affine vectors), writes ``y``."""
    rows, cols = REGIMES[p["regime"]]
    n = rows * cols
    per_elem = {"softmax": 4, "logsoftmax": 5, "layernorm": 6, "rmsnorm": 3}[p["kind"]]
    per_elem += len(extras(p)) + (p["scale"] != 1.0)
    return {
        "flops": CALLS * (n * per_elem + 2 * rows),
        "bytes": CALLS * (2 * n + len(extras(p)) * cols) * size,
        "dtype": "fp64" if p["dtype"] == "f64" else "fp32",
    }


def cpp_cases(p: Params) -> Cases:
    kinds = KIND_CASES[p["kind"]]
    perf = dict(zip(SIZES, REGIMES[p["regime"]], strict=True))
    return Cases(tests(SHAPES, SIZES, kinds), perf, CALLS, kinds[1])


def py_cases(p: Params) -> Cases:
    kinds = KIND_CASES[p["kind"]]
    small = tests(SIM_SHAPES, SIZES, kinds, host=(1, 2))
    small += tests([(3, 37)], SIZES, kinds[1:2], prefix=kinds[1])  # one more, device arrays
    return Cases(
        small,
        dict(zip(SIZES, REGIMES[p["regime"]], strict=True)),
        CALLS,
        kinds[1],
        gpu_tests=tests(GPU_SHAPES, SIZES, kinds, first=len(SIM_SHAPES)),
        sim_perf=dict(zip(SIZES, SIM_PERF, strict=True)),
    )


def formula(p: Params) -> str:
    s = "" if p["scale"] == 1.0 else f"{p['scale']:g} * "
    if p["kind"] == "softmax":
        return (f"`y[r][j] = exp({s}(x[r][j] - m)) / sum_k exp({s}(x[r][k] - m))` with "
                "`m = max_k x[r][k]`")  # fmt: skip
    if p["kind"] == "logsoftmax":
        return (f"`y[r][j] = {s}(x[r][j] - m) - log(sum_k exp({s}(x[r][k] - m)))` with "
                "`m = max_k x[r][k]`")  # fmt: skip
    aff = {"none": "", "gamma": " * gamma[j]", "gamma_beta": " * gamma[j] + beta[j]"}[p["affine"]]
    if p["kind"] == "layernorm":
        return (f"`y[r][j] = (x[r][j] - mu) / sqrt(var + {p['eps']:g}){aff}` with `mu` the mean "
                "of row `r` and `var = mean_k (x[r][k] - mu)^2` (the biased variance)")  # fmt: skip
    return f"`y[r][j] = x[r][j] / sqrt(mean_k x[r][k]^2 + {p['eps']:g}){aff}`"


def tolerance_text(p: Params, acc: str) -> str:
    r = f"{RTOL[p['kind']][acc]:g}".replace("e-0", "e-")
    scale = {
        "softmax": "`R * exact`",
        "logsoftmax": "`R * (1 + |a| + |L|)` (with `a` the scaled, shifted input and `L` the "
        "log of the row sum)",
        "layernorm": "`R * (1 + |xhat|) * |gamma| + R * |beta|` (with `xhat` the normalised "
        "value; `gamma = 1`, `beta = 0` without them)",
        "rmsnorm": "`R * (|xhat| + 1e-3) * |gamma|`",
    }[p["kind"]]
    return (
        f"Checking: `|y - exact| <= {scale}` per element with `R = {r}`, `exact` computed in "
        f"double on the CPU: row statistics accumulated in {acc} in any order (per-thread "
        "partials combined as a tree) pass; accumulating them in a narrower type does not."
    )


def difficulty(p: Params) -> str:
    score = {"softmax": 1, "logsoftmax": 1, "layernorm": 1, "rmsnorm": 0}[p["kind"]]
    score += (p["dtype"] == "f16") + (p["regime"] == "long") + (p["affine"] != "none")
    return "easy" if score <= 0 else "medium" if score <= 2 else "hard"
