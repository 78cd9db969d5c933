"""elementwise reference semantics (NumPy only; shared by the C++ and Python renderings'
checkers and copied verbatim into each problem's ``check/reference.py``).

Parameters: ``expr`` (a JSON expression tree: a leaf ``"x0"``; ``[op, a]`` for abs relu tanh
sigmoid exp sq; ``[op, a, b]`` for add sub mul max min; ``[op, a, c]`` with a constant for
scale shift), ``bcast`` (per input: full ``(rows, cols)``, row ``(cols,)``, col ``(rows, 1)``)
and ``dtype`` (f32 f64 f16: half data, float math). ``out`` is ``(rows, cols)``.
Every element must be within twice a forward error bound of evaluating the formula in the
compute type (unit roundoff ``u``), carried node by node around the exact value: add/sub
``ea + eb + u(|v| + ea + eb)``; mul ``|a|eb + |b|ea + ea eb`` plus rounding; max, min, abs,
relu the largest operand bound; tanh ``ea + 4u|v|``; sigmoid ``ea/4 + 8u|v|``; exp
``|v|(e^ea - 1) + 4u|v|``; sq ``2|a|ea + ea^2`` plus rounding; half outputs add the final
rounding to half.
"""

from __future__ import annotations

import numpy as np

STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
INPUT_RANGE = 2.0  # inputs are uniform in [-2, 2]
SHAPES = {"full": lambda r, c: (r, c), "row": lambda r, c: (c,), "col": lambda r, c: (r, 1)}


def unit_roundoff(p: dict) -> float:
    """The compute type's: double for f64, float otherwise (half data, float math)."""
    return 2.0**-53 if p["dtype"] == "f64" else 2.0**-24


def inputs(p: dict, sizes: dict) -> dict:
    r, c = sizes["rows"], sizes["cols"]
    return {f"x{i}": (SHAPES[b](r, c), STORE[p["dtype"]]) for i, b in enumerate(p["bcast"])}


def outputs(p: dict, sizes: dict) -> dict:
    return {"out": ((sizes["rows"], sizes["cols"]), STORE[p["dtype"]])}


def draw(p: dict, sizes: dict, kind: str, rng) -> dict:
    return {
        name: rng.uniform(-INPUT_RANGE, INPUT_RANGE, shape).astype(dtype)
        for name, (shape, dtype) in inputs(p, sizes).items()
    }


def bound(tree, env: dict, u: float):
    """(exact value, forward error bound) of ``tree`` over the float64 arrays in ``env``."""
    if isinstance(tree, str):
        return env[tree], 0.0
    op, *args = tree
    a, ea = bound(args[0], env, u)
    if op in ("add", "sub", "mul"):
        b, eb = bound(args[1], env, u)
        if op == "mul":
            t, prop = a * b, np.abs(a) * eb + np.abs(b) * ea + ea * eb
        else:
            t, prop = (a + b if op == "add" else a - b), ea + eb
        return t, prop + u * (np.abs(t) + prop)
    if op in ("max", "min"):
        b, eb = bound(args[1], env, u)
        return (np.maximum(a, b) if op == "max" else np.minimum(a, b)), np.maximum(ea, eb)
    if op == "scale":
        c = args[1]
        t = a * c
        return t, abs(c) * ea + u * (np.abs(t) + abs(c) * ea)
    if op == "shift":
        t = a + args[1]
        return t, ea + u * (np.abs(t) + ea)
    if op == "abs":
        return np.abs(a), ea
    if op == "relu":
        return np.maximum(a, 0.0), ea
    if op == "tanh":
        t = np.tanh(a)
        return t, ea + 4.0 * u * np.abs(t)
    if op == "sigmoid":
        t = 1.0 / (1.0 + np.exp(-a))
        return t, 0.25 * ea + 8.0 * u * np.abs(t)
    if op == "exp":
        t = np.exp(a)
        return t, np.abs(t) * np.expm1(ea) + 4.0 * u * np.abs(t)
    if op == "sq":
        t, prop = a * a, 2.0 * np.abs(a) * ea + ea * ea
        return t, prop + u * (np.abs(t) + prop)
    raise ValueError(f"unknown operator {op!r}")


def expected(p: dict, sizes: dict, arrays: dict) -> dict:
    shape = (sizes["rows"], sizes["cols"])
    env = {k: a.astype(np.float64) for k, a in arrays.items()}
    t, e = bound(p["expr"], env, unit_roundoff(p))
    want = np.broadcast_to(t, shape)
    tol = 2.0 * np.broadcast_to(e, shape)
    if p["dtype"] == "f16":  # the final rounding to half
        tol = tol + np.abs(want) * 2.0**-11 + 2.0**-25
    return {"out": (want, tol + 1e-300)}
