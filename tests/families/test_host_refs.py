"""The C++ host reference of every cuda_cpp family (``test/host_ref.h``, the harness's expected
values) compiled with g++ and compared with a NumPy oracle on random inputs, edge shapes
included; and the host-side half conversions against NumPy's float16, every bit pattern."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from cudaenv.families import get_family
from cudaenv.families.base import build_problem
from cudaenv.families.cpp import HALF_HOST
from tests.families import hostref

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def _host_ref(family: str, params: dict) -> str:
    p = build_problem(get_family(family), params)
    return {f.path: f.content for f in p.test_files}["test/host_ref.h"]


def test_half_conversions_match_numpy(tmp_path: Path) -> None:
    header = "#pragma once\n#include <cmath>\n#include <cstdint>\n" + HALF_HOST
    call = """        std::vector<uint16_t> h = take<uint16_t>(a[0]);
        std::vector<float> f = take<float>(a[1]);
        std::vector<float> hf(a[0] + 1);
        std::vector<uint16_t> fh(a[1] + 1);
        for (long long i = 0; i < a[0]; ++i) hf[i] = host_h2f(h[i]);
        for (long long i = 0; i < a[1]; ++i) fh[i] = host_f2h(f[i]);
        give(hf, a[0]);
        give(fh, a[1]);"""
    binary = hostref.build([hostref.Variant(header, call)], tmp_path)
    bits = np.arange(1 << 16, dtype=np.uint16)
    rng = np.random.default_rng(0)
    halves = bits.view(np.float16).astype(np.float32)
    finite = halves[np.isfinite(halves)]
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)  # exact ties
    floats = np.concatenate([
        finite, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, -np.float32(np.inf)),
        rng.uniform(-70000, 70000, 20000).astype(np.float32),
        (rng.standard_normal(20000) * 1e-6).astype(np.float32),
        np.array([65504, 65519.99, 65520, 1e30, -1e30, np.inf, -np.inf, 0.0, -0.0], np.float32),
    ]).astype(np.float32)  # fmt: skip
    out = hostref.run(binary, 0, [bits.size, floats.size], bits.tobytes() + floats.tobytes())
    h2f, f2h = hostref.split(out, (np.float32, bits.size), (np.uint16, floats.size))
    same = (h2f == halves) | (np.isnan(h2f) & np.isnan(halves))
    assert same.all()
    with np.errstate(over="ignore"):
        want = floats.astype(np.float16).view(np.uint16)
    assert np.array_equal(f2h, want), np.flatnonzero(f2h != want)[:5]
    nan = np.array([np.nan], np.float32)
    out = hostref.run(binary, 0, [0, 1], nan.tobytes())
    assert np.isnan(np.frombuffer(out, np.uint16).view(np.float16)).all()


# --- reduce-axis --------------------------------------------------------------------------

REDUCE_HOST = {
    "f32": ("float", np.float32),
    "f64": ("double", np.float64),
    "f16": ("uint16_t", np.uint16),
}


def _reduce_variants() -> list[dict]:
    out = []
    for axis in ("row", "col", "mid"):
        for op in ("sum", "mean", "norm2", "max", "min", "absmax", "argmax", "argmin"):
            for dtype in ("f32", "f64", "f16"):
                out.append({"axis": axis, "op": op, "dtype": dtype, "pitched": axis != "mid"})
    return out


def _reduce_oracle(params: dict, x: np.ndarray, cols: int) -> tuple[np.ndarray, ...]:
    v = (x.view(np.float16) if params["dtype"] == "f16" else x).astype(np.float64)[..., :cols]
    axis = 2 if params["axis"] == "row" else 1
    op = params["op"]
    if op in ("sum", "mean"):
        val, mag = v.sum(axis=axis), np.abs(v).sum(axis=axis)
        if op == "mean":
            val, mag = val / v.shape[axis], mag / v.shape[axis]
    elif op == "norm2":
        val = np.sqrt((v * v).sum(axis=axis))
        mag = val
    else:
        w = np.abs(v) if op == "absmax" else v
        pick = {"max": np.max, "absmax": np.max, "min": np.min, "argmax": np.max, "argmin": np.min}
        val, mag = pick[op](w, axis=axis), np.zeros(1)
        if op in ("argmax", "argmin"):
            idx = (np.argmax if op == "argmax" else np.argmin)(w, axis=axis)
            return val.reshape(-1), mag, idx.reshape(-1)
    return val.reshape(-1), mag.reshape(-1), None


def test_reduce_axis_host_reference_matches_numpy(tmp_path: Path) -> None:
    variants = _reduce_variants()
    calls = []
    for params in variants:
        host = REDUCE_HOST[params["dtype"]][0]
        n_out = {"row": "(size_t)rows", "col": "(size_t)cols", "mid": "(size_t)batch * cols"}
        calls.append(hostref.Variant(_host_ref("reduce-axis", params), f"""        const int batch = a[0], rows = a[1], cols = a[2], ld = a[3];
        const size_t n = (size_t)batch * rows * ld, n_out = {n_out[params["axis"]]};
        std::vector<{host}> x = take<{host}>(n);
        std::vector<double> val(n_out + 1), mag(n_out + 1);
        std::vector<int> idx(n_out + 1);
        host_reduce(x.data(), batch, rows, cols, ld, val.data(), mag.data(), idx.data());
        give(val, n_out);
        give(mag, n_out);
        give(idx, n_out);"""))  # fmt: skip
    binary = hostref.build(calls, tmp_path)
    rng = np.random.default_rng(7)
    for i, params in enumerate(variants):
        shapes = [(1, 1, 1, 0), (1, 3, 5, 2), (1, 33, 70, 7), (1, 1000, 3, 0), (1, 4, 4099, 1)]
        if params["axis"] == "mid":
            shapes = [(1, 1, 1, 0), (2, 5, 3, 0), (3, 33, 7, 0), (4, 200, 9, 0)]
        for batch, rows, cols, pad in shapes:
            ld = cols + pad
            np_host = REDUCE_HOST[params["dtype"]][1]
            vals = (
                rng.integers(-3, 4, (batch, rows, ld))
                if i % 2
                else rng.uniform(-5, 5, (batch, rows, ld))
            )
            vals[..., cols:] = 6e4  # padding: never read
            x = (
                vals.astype(np.float16).view(np.uint16)
                if np_host is np.uint16
                else vals.astype(np_host)
            )
            n_out = rows if params["axis"] == "row" else batch * cols
            out = hostref.run(binary, i, [batch, rows, cols, ld], x.tobytes())
            val, mag, idx = hostref.split(
                out, (np.float64, n_out), (np.float64, n_out), (np.int32, n_out)
            )
            want, want_mag, want_idx = _reduce_oracle(params, x, cols)
            where = (params, (batch, rows, cols, pad))
            if params["op"] in ("sum", "mean", "norm2"):
                assert np.all(np.abs(val - want) <= 1e-12 * want_mag + 1e-300), where
                assert np.allclose(mag, want_mag, rtol=1e-12, atol=0), where
            else:
                assert np.array_equal(val, want), where
            if want_idx is not None:
                assert np.array_equal(idx, want_idx), where


# --- the families built on cpp_harness: their harness spec drives the driver -------------

from cudaenv.families import (  # noqa: E402
    cpp,
    elementwise,
    generate,
    index,
    matmul,
    permute,
    rownorm,
    scan,
    stencil,
)
from tests.families.oracles import ORACLES  # noqa: E402

TYPES = {**cpp.CTYPES, "i32": cpp.INT32}
SPECS = {
    "elementwise": lambda p: elementwise.harness_spec(p, TYPES[p["dtype"]]),
    "rownorm": lambda p: rownorm.harness_spec(p, TYPES[p["dtype"]]),
    "permute": permute.harness_spec,
    "stencil": lambda p: stencil.harness_spec(p, TYPES[p["dtype"]]),
    "scan": lambda p: scan.harness_spec(p, TYPES[p["dtype"]]),
    "matmul": lambda p: matmul.harness_spec(p, TYPES[p["dtype"]]),
    "indexing": lambda p: index.harness_spec(p, TYPES[p["dtype"]]),
}
VARIANTS = 12
MAX_WORK = 60_000  # elements (matmul: multiply-adds / 100) per checked case


def _work(family: str, values: dict[str, int]) -> int:
    n = 1
    for v in values.values():
        n *= max(v, 1)
    return n // 100 if family == "matmul" else n


@pytest.mark.parametrize("family", sorted(ORACLES))
def test_host_reference_matches_numpy(family: str, tmp_path: Path) -> None:
    make_inputs, check = ORACLES[family]
    problems = generate([family], count=VARIANTS, seed=77)
    params = [dict(p.metadata.params) for p in problems]
    variants = [
        hostref.spec_variant(
            {f.path: f.content for f in pr.test_files}["test/host_ref.h"], SPECS[family](pa)
        )
        for pr, pa in zip(problems, params, strict=True)
    ]
    binary = hostref.build(variants, tmp_path)
    rng = np.random.default_rng(3)
    checked = 0
    for i, p in enumerate(params):
        spec = SPECS[family](p)
        arrays = spec.inputs + [o for o in spec.outputs if o.inout]
        for _, vals, _ in spec.cases:
            v = dict(zip(spec.vars, vals, strict=True))
            if _work(family, v) > MAX_WORK:
                continue
            ins = make_inputs(p, v, rng)
            for a in arrays:
                assert ins[a.name].size == hostref.size_of(a.size, v), (a.name, v)
            data = b"".join(np.ascontiguousarray(ins[a.name]).tobytes() for a in arrays)
            blob = hostref.run(binary, i, list(vals), data)
            layout = []
            for o in spec.outputs:
                n = hostref.size_of(o.size, v)
                layout += [(np.float64, n), (np.float64, n)]
            got = hostref.split(blob, *layout)
            outs = {o.name: (got[2 * k], got[2 * k + 1]) for k, o in enumerate(spec.outputs)}
            check(p, v, ins, outs)
            checked += 1
    assert checked >= VARIANTS
