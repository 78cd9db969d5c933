"""The families' reference semantics (``cudaenv/families/refs/``, what every generated checker
runs) against NumPy oracles written independently in tests/families/oracles.py, on random
inputs and edge shapes: the expected values agree, and each tolerance admits a straightforward
lower-precision evaluation (NumPy in float32 or float16), so a checker never rejects a correct
solution. One module per family serves both its renderings; both renderings' checkers carry
that module's source unchanged."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from cudaenv.families import generate
from cudaenv.families.checks import ref_source
from tests.families.oracles import ORACLES

VARIANTS = 12
MAX_WORK = 60_000  # elements (matmul: multiply-adds / 100) per checked case
SIZES = {
    "elementwise": ("rows", "cols"),
    "rownorm": ("rows", "cols"),
    "stencil": None,  # (n,) or (rows, cols) by dimension
    "scan": ("rows", "cols"),
    "matmul": ("M", "N", "K"),
    "indexing": None,  # (n, rows) or (n,) for histograms
    "permute": None,  # d0 .. d{n-1}
}
SHAPES = {
    "elementwise": [(0, 7), (1, 1), (1, 33), (3, 5), (7, 32), (5, 1000), (64, 257), (1000, 1),
                    (20000, 3), (300, 41)],
    "rownorm": [(0, 5), (1, 1), (1, 7), (3, 5), (2, 32), (5, 33), (64, 500), (17, 1099)],
    "scan": [(1, 0), (1, 1), (3, 5), (7, 32), (5, 33), (64, 500), (1, 4097), (2, 10003)],
    "matmul": [(1, 1, 1), (3, 5, 7), (1, 100, 513), (100, 1, 37), (33, 65, 17), (64, 64, 64),
               (129, 257, 300)],
}  # fmt: skip


def _module(family: str):
    return importlib.import_module(f"cudaenv.families.refs.{family.replace('-', '_')}")


def _cases(family: str, p: dict) -> list[dict[str, int]]:
    if family == "stencil":
        shapes = [(0,), (1,), (2,), (5,), (33,), (1000,)] if p["dim"] == 1 else [
            (0, 5), (1, 1), (1, 7), (3, 5), (7, 33), (33, 7), (64, 257), (100, 3)]  # fmt: skip
        names = ("n",) if p["dim"] == 1 else ("rows", "cols")
    elif family == "permute":
        n = len(p["perm"])
        names = tuple(f"d{k}" for k in range(n))
        shapes = {2: [(0, 5), (1, 1), (3, 5), (33, 65)], 3: [(1, 1, 1), (2, 3, 5), (7, 33, 65)],
                  4: [(2, 0, 3, 4), (2, 3, 5, 7), (3, 33, 2, 65)]}[n]  # fmt: skip
    elif family == "indexing":
        hist = p["op"] == "histogram"
        names = ("n",) if hist else ("n", "rows")
        shapes = [(0,), (1,), (33,), (1000,), (50000,)] if hist else [
            (0, 5), (1, 1), (5, 3), (33, 7), (1000, 50)]  # fmt: skip
    else:
        names, shapes = SIZES[family], SHAPES[family]
        if family == "scan" and p["layout"] == "1d":  # one array: one row
            shapes = [(1, c) for _, c in shapes]
    return [dict(zip(names, s, strict=True)) for s in shapes]


def _work(family: str, sizes: dict[str, int]) -> int:
    n = 1
    for v in sizes.values():
        n *= max(v, 1)
    return n // 100 if family == "matmul" else n


@pytest.mark.parametrize("family", sorted(ORACLES))
def test_reference_semantics_match_numpy(family: str) -> None:
    make_inputs, check = ORACLES[family]
    ref = _module(family)
    params = [dict(p.metadata.params) for p in generate([family], count=VARIANTS, seed=77)]
    rng = np.random.default_rng(3)
    checked = 0
    for p in params:
        for sizes in _cases(family, p):
            if _work(family, sizes) > MAX_WORK:
                continue
            stored = make_inputs(p, sizes, rng)  # the oracle's storage (half: its bits)
            arrays = {}
            for name, (shape, dtype) in ref.inputs(p, sizes).items():
                a = stored[name]
                arrays[name] = (a.view(np.float16) if dtype is np.float16 else a).reshape(shape)
            outs = {}
            for name, (want, tol) in ref.expected(p, sizes, arrays).items():
                w = np.asarray(want, dtype=np.float64).reshape(-1)
                t = np.zeros(w.shape) if tol is None else np.broadcast_to(tol, np.shape(want))
                outs[name] = (w, np.asarray(t, dtype=np.float64).reshape(-1))
            check(p, sizes, stored, outs)
            checked += 1
    assert checked >= VARIANTS


# --- reduce-axis (its oracle here) ---------------------------------------------------------


def _reduce_oracle(p: dict, x: np.ndarray, cols: int) -> tuple[np.ndarray, np.ndarray | None]:
    v = x.astype(np.float64)[..., :cols]
    axis = 0 if p["axis"] == "col" else 1
    op = p["op"]
    if op in ("sum", "mean"):
        val, mag = v.sum(axis=axis), np.abs(v).sum(axis=axis)
        if op == "mean":
            val, mag = val / v.shape[axis], mag / v.shape[axis]
        return val, mag
    if op == "norm2":
        val = np.sqrt((v * v).sum(axis=axis))
        return val, val
    w = np.abs(v) if op == "absmax" else v
    if op in ("argmax", "argmin"):
        return (np.argmax if op == "argmax" else np.argmin)(w, axis=axis), None
    return (np.min if op == "min" else np.max)(w, axis=axis), None


def test_reduce_axis_reference_matches_numpy() -> None:
    ref = _module("reduce-axis")
    rng = np.random.default_rng(7)
    for axis in ("row", "col", "mid"):
        for op in ("sum", "mean", "norm2", "max", "min", "absmax", "argmax", "argmin"):
            for dtype in ("f32", "f64", "f16"):
                p = {"axis": axis, "op": op, "dtype": dtype, "pitched": axis != "mid"}
                shapes = [
                    (1, 1, 1, 0),
                    (1, 3, 5, 2),
                    (1, 33, 70, 7),
                    (1, 1000, 3, 0),
                    (1, 4, 4099, 1),
                ]
                if axis == "mid":
                    shapes = [(1, 1, 1, 0), (2, 5, 3, 0), (3, 33, 7, 0), (4, 200, 9, 0)]  # fmt: skip
                for kind in ("uniform", "ties", "negative"):
                    for b, r, c, pad in shapes:
                        sizes = {"batch": b, "rows": r, "cols": c, "pad": pad}
                        x = ref.draw(p, sizes, kind, rng)["x"]
                        assert x.shape == ref.inputs(p, sizes)["x"][0]
                        if pad:  # the padding holds huge values, which no reduction reads
                            assert np.all(np.abs(x[..., c:].astype(np.float64)) > 5e4)
                        ((want, tol),) = ref.expected(p, sizes, {"x": x}).values()
                        oracle, mag = _reduce_oracle(p, x, c)
                        where = (p, sizes, kind)
                        assert want.shape == ref.outputs(p, sizes)["out"][0], where
                        if mag is None:
                            assert tol is None and np.array_equal(want, oracle), where
                            continue
                        assert np.all(np.abs(want - oracle) <= 1e-12 * mag + 1e-300), where
                        rtol = ref.RTOL["double" if dtype == "f64" else "float"]
                        assert np.allclose(tol, rtol * mag + ref.ATOL, rtol=1e-9, atol=0), where


def test_each_checker_carries_its_familys_module_unchanged() -> None:
    """Both renderings of a family run one module, the package's, verbatim."""
    for family in ("reduce-axis", "elementwise", "rownorm", "permute", "stencil", "scan"):
        for name in (family, f"py-{family}"):
            (p,) = generate([name], count=1, seed=5)
            files = {f.path: f.content for f in p.check_files}
            assert files["check/reference.py"] == ref_source(family.replace("-", "_")), name
            assert files["check/family_check.py"] == ref_source("family_check"), name
