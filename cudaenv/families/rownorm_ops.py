"""What the row-normalisation families share: the kinds (softmax, log-softmax, layernorm,
RMSNorm), their parameter space, formulas, tolerances, input kinds and the regimes of the
benchmark's row length."""

from __future__ import annotations

from cudaenv.families.base import Params

KINDS = ("softmax", "logsoftmax", "layernorm", "rmsnorm")
SCALES = (1.0, 2.0, 0.5)  # softmax(scale * x)
EPSILONS = (1e-5, 1e-6, 1e-3)
AFFINE = {"layernorm": ("none", "gamma", "gamma_beta"), "rmsnorm": ("none", "gamma")}
REGIMES = {"short": (65536, 128), "medium": (8192, 1024), "long": (512, 32768)}
FN = {"softmax": "softmax_rows", "logsoftmax": "log_softmax_rows",
      "layernorm": "layer_norm_rows", "rmsnorm": "rms_norm_rows"}  # fmt: skip
SHAPES = [(0, 5), (1, 1), (1, 7), (3, 5), (2, 32), (5, 33), (64, 1000), (1000, 64), (17, 4099),
          (300, 2048), (4, 100003), (2, 262144), (4096, 1), (70001, 3)]  # fmt: skip
# input kinds: uniform in [-5, 5]; rows shifted by multiples of 1000 (exp overflows without the
# row maximum, even in double); rows around 4 (the mean matters); constant rows
INPUT_KINDS = ("UNIFORM", "SHIFTED", "OFFSET", "CONSTANT")
#: relative tolerance by kind and accumulation type (see tolerance_text)
RTOL = {
    "softmax": {"float": 1e-4, "double": 1e-12},
    "logsoftmax": {"float": 5e-5, "double": 1e-12},
    "layernorm": {"float": 1e-3, "double": 1e-10},
    "rmsnorm": {"float": 1e-4, "double": 1e-12},
}


def space(dtypes: tuple[str, ...]) -> list[Params]:
    out: list[Params] = []
    for kind in KINDS:
        for dtype in dtypes:
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
