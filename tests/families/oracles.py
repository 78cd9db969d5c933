"""NumPy oracles for the families' reference semantics (``cudaenv/families/refs/``), written here
independently of the families: per family, inputs for a few shapes (in a storage of their own:
half as its bits) and a check of the reference's ``want`` (against NumPy in float64) and
``tol`` (it must admit a straightforward lower-precision evaluation, NumPy in float32 or
float16, so a checker never rejects a correct solution)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

HOST = {"f32": np.float32, "f64": np.float64, "f16": np.uint16, "i32": np.int32}


def store(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values in the harness's host storage (half: its bits)."""
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    return values.astype(HOST[dtype])


def value(arr: np.ndarray, dtype: str) -> np.ndarray:
    return (arr.view(np.float16) if dtype == "f16" else arr).astype(np.float64)


def low(dtype: str) -> type:
    """The type a plain implementation computes in."""
    return np.float64 if dtype == "f64" else np.float32


def within(got: np.ndarray, want: np.ndarray, tol: np.ndarray, what: str) -> None:
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinities pass through ==
        ok = (got == want) | (np.abs(got - want) <= tol)
    assert ok.all(), (what, np.flatnonzero(~ok)[:5], got[~ok][:3], want[~ok][:3], tol[~ok][:3])


def same_value(
    host: np.ndarray, want: np.ndarray, what: str, tol: np.ndarray | float = 0.0
) -> None:
    """Two double evaluations agree (to 1e-9 relative, or far inside the harness's tolerance
    where the result itself cancels)."""
    within(host, want, 1e-9 * np.abs(want) + 1e-3 * np.asarray(tol) + 1e-300, what)


# --- elementwise -------------------------------------------------------------------------


def _ev(tree: object, env: dict[str, np.ndarray], t: type) -> np.ndarray:
    if isinstance(tree, str):
        return env[tree].astype(t)
    op, *args = tree  # type: ignore[misc]
    a = _ev(args[0], env, t)
    c = t(args[1]) if op in ("scale", "shift") else None
    b = _ev(args[1], env, t) if op in ("add", "sub", "mul", "max", "min") else None
    table: dict[str, Callable[[], np.ndarray]] = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "max": lambda: np.maximum(a, b), "min": lambda: np.minimum(a, b), "abs": lambda: np.abs(a),
        "relu": lambda: np.maximum(a, t(0)), "tanh": lambda: np.tanh(a), "exp": lambda: np.exp(a),
        "sigmoid": lambda: t(1) / (t(1) + np.exp(-a)), "sq": lambda: a * a,
        "scale": lambda: a * c, "shift": lambda: a + c,
    }  # fmt: skip
    return table[op]().astype(t)


def _bc_shape(kind: str, rows: int, cols: int) -> tuple[int, ...]:
    return {"full": (rows, cols), "row": (cols,), "col": (rows, 1)}[kind]


def ew_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    return {
        f"x{i}": store(rng.uniform(-2, 2, _bc_shape(b, v["rows"], v["cols"])), p["dtype"])
        for i, b in enumerate(p["bcast"])
    }


def ew_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    env = {k: value(a, p["dtype"]) for k, a in ins.items()}
    shape = (v["rows"], v["cols"])
    want = np.broadcast_to(_ev(p["expr"], env, np.float64), shape).reshape(-1)
    host_want, tol = outs["out"]
    same_value(host_want, want, "want", tol)
    plain = (
        np.broadcast_to(_ev(p["expr"], env, low(p["dtype"])), shape).reshape(-1).astype(np.float64)
    )
    if p["dtype"] == "f16":
        plain = plain.astype(np.float16).astype(np.float64)
    within(plain, want, tol, "a plain evaluation is within tol")


# --- rownorm -----------------------------------------------------------------------------


def rn_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    r, c = v["rows"], v["cols"]
    x = rng.uniform(-5, 5, (r, c)) + (1000.0 * (np.arange(r) % 3 - 1))[:, None] * (
        p["kind"] in ("softmax", "logsoftmax")
    )
    out = {"x": store(x, p["dtype"])}
    if p["affine"] in ("gamma", "gamma_beta"):
        out["gamma"] = store(rng.uniform(-2, 2, c), p["dtype"])
    if p["affine"] == "gamma_beta":
        out["beta"] = store(rng.uniform(-1, 1, c), p["dtype"])
    return out


def _rownorm(
    p: dict, x: np.ndarray, g: np.ndarray | float, b: np.ndarray | float, t: type
) -> np.ndarray:
    x = x.astype(t)
    s = t(p["scale"])
    if p["kind"] in ("softmax", "logsoftmax"):
        a = s * (x - x.max(axis=1, keepdims=True))
        tot = np.exp(a).sum(axis=1, keepdims=True, dtype=t)
        return np.exp(a) / tot if p["kind"] == "softmax" else a - np.log(tot)
    if p["kind"] == "layernorm":
        mu = x.mean(axis=1, keepdims=True, dtype=t)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True, dtype=t)
        return (x - mu) / np.sqrt(var + t(p["eps"])) * g + b
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True, dtype=t) + t(p["eps"])) * g


def rn_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    dt = p["dtype"]
    x = value(ins["x"], dt)
    g = value(ins["gamma"], dt) if "gamma" in ins else 1.0
    b = value(ins["beta"], dt) if "beta" in ins else 0.0
    want = _rownorm(p, x, g, b, np.float64).reshape(-1)
    host_want, tol = outs["y"]
    same_value(host_want, want, "want", tol)
    plain = _rownorm(p, x, g, b, low(dt)).reshape(-1).astype(np.float64)
    if dt == "f16":
        plain = plain.astype(np.float16).astype(np.float64)
    within(plain, want, tol, "a plain evaluation is within tol")


# --- permute -----------------------------------------------------------------------------


def pm_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    shape = tuple(v[f"d{k}"] for k in range(len(p["perm"])))
    vals = (
        rng.integers(-1000, 1001, shape) if p["dtype"] == "i32" else rng.uniform(-100, 100, shape)
    )
    return {"x": store(vals, p["dtype"])}


def pm_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    shape = tuple(v[f"d{k}"] for k in range(len(p["perm"])))
    x = value(ins["x"], p["dtype"]).reshape(shape)
    want, tol = outs["y"]
    assert np.array_equal(want, x.transpose(p["perm"]).reshape(-1)) and not tol.any()


# --- stencil -----------------------------------------------------------------------------

PAD = {"clamp": "edge", "zero": "constant", "wrap": "wrap", "mirror": "reflect"}


def st_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    shape = (v["n"],) if p["dim"] == 1 else (v["rows"], v["cols"])
    return {"x": store(rng.uniform(-2, 2, shape), p["dtype"])}


def _taps(p: dict) -> list[tuple[int, int]]:
    r = p["radius"]
    if p["dim"] == 1:
        return [(0, k) for k in range(-r, r + 1)]
    if p["shape"] == "box":
        return [(a, b) for a in range(-r, r + 1) for b in range(-r, r + 1)]
    return sorted(
        [(0, 0)] + [(a, 0) for a in range(-r, r + 1) if a] + [(0, b) for b in range(-r, r + 1) if b]
    )


def _stencil(p: dict, x: np.ndarray, t: type) -> np.ndarray:
    r = p["radius"]
    x2 = x.reshape(1, -1) if p["dim"] == 1 else x
    pad = ((0, 0), (r, r)) if p["dim"] == 1 else r
    xp = np.pad(x2.astype(t), pad, mode=PAD[p["boundary"]])
    rows, cols = x2.shape
    out = np.zeros((rows, cols), t)
    for (a, b), w in zip(_taps(p), p["weights"], strict=True):
        a0 = 0 if p["dim"] == 1 else r + a
        out = out + t(w) * xp[a0 : a0 + rows, r + b : r + b + cols]
    return out.reshape(-1)


def st_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    x = value(ins["x"], p["dtype"])
    shape = (v["n"],) if p["dim"] == 1 else (v["rows"], v["cols"])
    if x.size == 0:
        assert outs["y"][0].size == 0
        return
    x = x.reshape(shape)
    want = _stencil(p, x, np.float64)
    host_want, tol = outs["y"]
    same_value(host_want, want, "want", tol)
    plain = _stencil(p, x, low(p["dtype"])).astype(np.float64)
    if p["dtype"] == "f16":
        plain = plain.astype(np.float16).astype(np.float64)
    within(plain, want, tol, "a plain evaluation is within tol")


# --- scan --------------------------------------------------------------------------------


def sc_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    shape = (v["rows"], v["cols"])
    vals = rng.integers(-100, 101, shape) if p["dtype"] == "i32" else rng.uniform(-1, 1, shape)
    out = {"x": store(vals, p["dtype"])}
    if p["segmented"]:
        out["flags"] = (rng.integers(0, 6, shape) == 0).astype(np.int32)
    return out


def _scan(p: dict, x: np.ndarray, heads: np.ndarray, t: type) -> np.ndarray:
    ident = {"add": 0.0, "max": -np.inf, "min": np.inf}[p["op"]]
    if p["dtype"] == "i32" and p["op"] != "add":
        ident = float(-(2**31)) if p["op"] == "max" else float(2**31 - 1)
    fn = {"add": lambda a, b: a + b, "max": max, "min": min}[p["op"]]
    out = np.empty(x.shape, np.float64)
    for r in range(x.shape[0]):
        run = t(ident)
        for c in range(x.shape[1]):
            head = c == 0 or heads[r, c]
            before = t(ident) if head else run
            run = t(x[r, c]) if head else t(fn(run, t(x[r, c])))
            out[r, c] = run if p["kind"] == "inclusive" else before
    return out.reshape(-1)


def sc_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    x = value(ins["x"], p["dtype"]).reshape(v["rows"], v["cols"])
    heads = ins.get("flags", np.zeros(x.shape, np.int32)).reshape(x.shape)
    want = _scan(p, x, heads, np.float64)
    host_want, tol = outs["out"]
    within(host_want, want, np.abs(want) * 1e-12, "want")
    plain = _scan(p, x, heads, low(p["dtype"]) if p["dtype"] != "i32" else np.float64)
    within(plain, want, tol, "a plain evaluation is within tol")


# --- matmul ------------------------------------------------------------------------------


def mm_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    m, n, k = v["M"], v["N"], v["K"]
    out = {"A": store(rng.uniform(-1, 1, (k, m) if p["trans_a"] else (m, k)), p["dtype"]),
           "B": store(rng.uniform(-1, 1, (n, k) if p["trans_b"] else (k, n)), p["dtype"])}  # fmt: skip
    if p["epilogue"] in ("bias", "bias_relu", "bias_gelu"):
        out["bias"] = store(rng.uniform(-1, 1, n), p["dtype"])
    elif p["epilogue"] != "none":
        out["D"] = store(rng.uniform(-1, 1, (m, n)), p["dtype"])
    return out


def _mm(p: dict, v: dict, ins: dict, t: type) -> np.ndarray:
    m, n, k = v["M"], v["N"], v["K"]
    dt = p["dtype"]
    a = value(ins["A"], dt).reshape((k, m) if p["trans_a"] else (m, k)).astype(t)
    b = value(ins["B"], dt).reshape((n, k) if p["trans_b"] else (k, n)).astype(t)
    c = (a.T if p["trans_a"] else a) @ (b.T if p["trans_b"] else b)
    e = p["epilogue"]
    if e.startswith("bias"):
        c = c + value(ins["bias"], dt).astype(t)
        if e == "bias_relu":
            c = np.maximum(c, t(0))
        if e == "bias_gelu":
            c = t(0.5) * c * (t(1) + np.tanh(t(math.sqrt(2 / math.pi)) * (c + t(0.044715) * c**3)))
    elif e == "residual":
        c = c + value(ins["D"], dt).reshape(m, n).astype(t)
    elif e == "scale_residual":
        c = t(0.5) * c - t(1.5) * value(ins["D"], dt).reshape(m, n).astype(t)
    return c.reshape(-1).astype(np.float64)


def mm_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    want = _mm(p, v, ins, np.float64)
    host_want, tol = outs["C"]
    same_value(host_want, want, "want", tol)
    plain = _mm(p, v, ins, low(p["dtype"]))
    if p["dtype"] == "f16":
        plain = plain.astype(np.float16).astype(np.float64)
    within(plain, want, tol, "a plain evaluation is within tol")


# --- indexing ----------------------------------------------------------------------------


def ix_inputs(p: dict, v: dict, rng: np.random.Generator) -> dict:
    d, dt = p["width"], p["dtype"]
    if p["op"] == "histogram":
        b = d
        out = {"x": (rng.integers(0, 9 * b, v["n"]) - b // 2).astype(np.float32) / np.float32(32)}
        if p["weighted"]:
            out["w"] = rng.uniform(-2, 2, v["n"]).astype(np.float32)
        return out
    n, rows = v["n"], v["rows"]
    ints = dt == "i32"
    draw = (
        (lambda shape: store(rng.integers(-100, 101, shape), dt))
        if ints
        else (lambda shape: store(rng.uniform(-1, 1, shape), dt))
    )
    idx = rng.integers(0, rows, n).astype(np.int32)
    if p["op"] == "gather":
        return {"table": draw((rows, d)), "idx": idx}
    out = {"x": draw((n, d)), "idx": idx}
    if p["weighted"]:
        out["w"] = draw((n,))
    out["out"] = draw((rows, d))
    return out


def ix_check(p: dict, v: dict, ins: dict, outs: dict) -> None:
    d, dt = p["width"], p["dtype"]
    if p["op"] == "gather":
        want = value(ins["table"], dt).reshape(-1, d)[ins["idx"]].reshape(-1)
        host, tol = outs["out"]
        assert np.array_equal(host, want) and not tol.any()
        return
    if p["op"] == "scatter_add":
        acc = value(ins["out"], dt).reshape(-1, d).copy()
        terms = value(ins["x"], dt).reshape(-1, d)
        if p["weighted"]:
            terms = terms * value(ins["w"], dt)[:, None]
        np.add.at(acc, ins["idx"], terms)
        host, tol = outs["out"]
        same_value(host, acc.reshape(-1), "want", tol)
        plain = value(ins["out"], dt).reshape(-1, d).astype(low(dt)).copy()
        np.add.at(plain, ins["idx"], terms.astype(low(dt)))
        within(plain.reshape(-1).astype(np.float64), acc.reshape(-1), tol, "plain within tol")
        return
    b = np.floor(ins["x"].astype(np.float64) * 4).astype(np.int64)
    keep = (b >= 0) & (b < d) if p["policy"] == "drop" else np.ones(b.shape, bool)
    b = np.clip(b, 0, d - 1)
    w = ins["w"].astype(np.float64) if p["weighted"] else np.ones(b.shape)
    want = np.bincount(b[keep], weights=w[keep], minlength=d).astype(np.float64)
    host, tol = outs["hist"]
    same_value(host, want, "want", tol)
    if p["weighted"]:
        plain = np.zeros(d, np.float32)
        np.add.at(plain, b[keep], ins["w"][keep])
        within(plain.astype(np.float64), want, tol, "plain within tol")


ORACLES = {
    "elementwise": (ew_inputs, ew_check),
    "rownorm": (rn_inputs, rn_check),
    "permute": (pm_inputs, pm_check),
    "stencil": (st_inputs, st_check),
    "scan": (sc_inputs, sc_check),
    "matmul": (mm_inputs, mm_check),
    "indexing": (ix_inputs, ix_check),
}
