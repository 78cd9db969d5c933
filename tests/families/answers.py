"""Outputs for a generated problem's checker written the way its runner writes them, with the
values computed here in NumPy, independently of the families' reference semantics: the plain
evaluations of :mod:`tests.families.oracles` (float32 where the problem computes in float,
as a straightforward solution would), stored in the output's type.

:func:`respond` reads a checker's ``gen`` folder and writes, per case, what a correct runner
writes (C++: flat arrays, the output's guard poisoned, every input back with its guard;
Python: host and device variants; benchmark: every timed call's output); ``mutate`` changes
the arrays before they are written, to show each check of the checker rejecting.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cudaenv.problems.model import Problem
from tests.families import oracles
from tests.families.oracles import low, value

GUARD = 64
POISON = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}
SCALARS = {"work", "guard", "host", "calls"}
Arrays = dict[str, np.ndarray]


def poison(count: int, dtype: np.dtype) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    return np.full(count, POISON[size], dtype=f"<u{size}").view(dtype)


def _reduce(p: dict, s: dict, ins: Arrays) -> Arrays:
    x = ins["x"][..., : s["cols"]]
    axis = 0 if p["axis"] == "col" else 1
    op = p["op"]
    if op in ("argmax", "argmin"):
        return {"out": getattr(np, op)(x, axis=axis).astype(np.int32)}
    if op in ("max", "min", "absmax"):
        v = np.abs(x) if op == "absmax" else x
        return {"out": (v.min(axis=axis) if op == "min" else v.max(axis=axis)).astype(x.dtype)}
    t = np.float64 if p["dtype"] == "f64" else np.float32
    # the reduced axis last and contiguous: NumPy sums it pairwise, as a GPU's tree would
    v = np.ascontiguousarray(np.moveaxis(x.astype(t), axis, -1))
    got = {"sum": lambda: v.sum(axis=-1), "mean": lambda: v.mean(axis=-1),
           "norm2": lambda: np.sqrt((v * v).sum(axis=-1))}[op]()  # fmt: skip
    return {"out": np.asarray(got, dtype=t)}


def _typed(values: np.ndarray, p: dict) -> np.ndarray:
    dt = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32}[p["dtype"]]
    return np.asarray(values).astype(dt)


def _indexing(p: dict, s: dict, ins: Arrays) -> Arrays:
    if p["op"] == "gather":
        return {"out": ins["table"][ins["idx"]]}
    if p["op"] == "scatter_add":
        t = np.int64 if p["dtype"] == "i32" else low(p["dtype"])
        out = ins["out"].astype(t)
        terms = ins["x"].astype(t) * (ins["w"].astype(t)[:, None] if "w" in ins else t(1))
        np.add.at(out, ins["idx"], terms)
        return {"out": _typed(out, p)}
    d = p["width"]
    b = np.floor(ins["x"].astype(np.float64) * 4).astype(np.int64)
    keep = (b >= 0) & (b < d) if p["policy"] == "drop" else np.ones(b.shape, bool)
    b = np.clip(b, 0, d - 1)
    if not p["weighted"]:
        return {"hist": np.bincount(b[keep], minlength=d).astype(np.int32)}
    hist = np.zeros(d, np.float32)
    np.add.at(hist, b[keep], ins["w"][keep])
    return {"hist": hist}


def _scan(p: dict, s: dict, ins: Arrays) -> Arrays:
    x = np.atleast_2d(value(ins["x"], p["dtype"]))
    heads = np.atleast_2d(ins.get("flags", np.zeros(ins["x"].shape, np.int32)))
    t = np.float64 if p["dtype"] == "i32" else low(p["dtype"])
    got = oracles._scan(p, x, heads, t)
    return {"out": _typed(got.reshape(ins["x"].shape), p)}


def answer(family: str, p: dict, s: dict, ins: Arrays) -> Arrays:
    """The outputs of one call on ``ins`` (arrays in their shapes), in the output types."""
    base = family.removeprefix("py-")
    dt = p.get("dtype", "f32")
    if base == "reduce-axis":
        return _reduce(p, s, ins)
    if base == "elementwise":
        env = {k: value(a, dt) for k, a in ins.items()}
        got = oracles._ev(p["expr"], env, low(dt))
        return {"out": _typed(np.broadcast_to(got, (s["rows"], s["cols"])), p)}
    if base == "rownorm":
        x = value(ins["x"], dt)
        g = value(ins["gamma"], dt) if "gamma" in ins else 1.0
        b = value(ins["beta"], dt) if "beta" in ins else 0.0
        got = oracles._rownorm(p, x, g, b, low(dt)) if x.size else x
        return {"y": _typed(got, p)}
    if base == "permute":
        return {"y": np.ascontiguousarray(ins["x"].transpose(p["perm"]))}
    if base == "stencil":
        x = value(ins["x"], dt)
        got = oracles._stencil(p, x, low(dt)).reshape(x.shape) if x.size else x
        return {"y": _typed(got, p)}
    if base == "scan":
        return _scan(p, s, ins) if ins["x"].size else {"out": ins["x"].copy()}
    if base == "matmul":
        got = oracles._mm(p, s, ins, low(dt)).reshape(s["M"], s["N"])
        return {"C": _typed(got, p)}
    return _indexing(p, s, ins)


def _module(problem: Problem):
    """The family's reference module (for the shapes of the arrays only)."""
    base = str(problem.metadata.family).removeprefix("py-")
    return importlib.import_module(f"cudaenv.families.refs.{base.replace('-', '_')}")


Mutate = Callable[[str, Arrays], Arrays]


def respond(problem: Problem, inputs: Path, outputs: Path, mutate: Mutate | None = None) -> Path:
    """Write into ``outputs`` what a correct runner writes for the cases in ``inputs`` (a
    checker's gen folder), each case's arrays passed through ``mutate(case, arrays)``."""
    family, p = problem.metadata.family, dict(problem.metadata.params)
    ref = _module(problem)
    cpp = problem.problem_type == "cuda_cpp"
    for name in (inputs / "manifest.txt").read_text().split():
        case = {f.stem: np.load(f) for f in (inputs / name).glob("*.npy")}
        sizes = {
            k: int(v)
            for k, v in case.items()
            if v.ndim == 0 and "." not in k and k not in SCALARS and v.dtype == np.int32
        }
        shapes = ref.inputs(p, sizes)
        outs: Arrays = {}
        if name == "perf":
            for r in range(int(case["calls"])):
                ins = {}
                for k, (shape, _) in shapes.items():
                    if f"{k}.stride" in case:
                        start = r * int(case[f"{k}.stride"])
                        count = int(np.prod(shape, dtype=np.int64))
                        ins[k] = case[k][start : start + count].reshape(shape)
                    else:
                        ins[k] = case[f"{k}.{r}"].reshape(shape)
                for k, a in answer(family, p, sizes, ins).items():
                    outs[f"{k}.{r}"] = _lay(a, cpp)
        else:
            ins = {k: case[k].reshape(shape) for k, (shape, _) in shapes.items()}
            got = answer(family, p, sizes, ins)
            variants = [""] if cpp else (["host"] if int(case["host"]) else []) + ["device"]
            for v in variants:
                dot = f".{v}" if v else ""
                outs |= {f"{k}{dot}": _lay(a, cpp) for k, a in got.items()}
                for k in shapes:
                    if k in got:  # in-out: judged as an output
                        continue
                    outs[f"{k}.after" if cpp else f"{k}{dot}"] = _lay(case[k], cpp)
        if mutate is not None:
            outs = mutate(name, outs)
        (outputs / name).mkdir(parents=True, exist_ok=True)
        for k, a in outs.items():
            np.save(outputs / name / f"{k}.npy", a, allow_pickle=False)
    return outputs


def _lay(a: np.ndarray, cpp: bool) -> np.ndarray:
    """C++: flat, the guard's poison after it; Python: as is."""
    if not cpp:
        return np.ascontiguousarray(a)
    flat = np.ascontiguousarray(a).reshape(-1)
    return np.concatenate([flat, poison(GUARD, flat.dtype)])
