"""The cuBLAS level-1 and level-2 problems' checkers without a GPU (cublas-axpy-dot,
cublas-gemv-rows).

For each: the test stage's cases, answered by NumPy written here (row-major and column-major
indexing spelled out, not the checker's own functions), pass ``verify``; every kind of wrong
output fails it, each as its own case of one ``verify`` (tests/grading/split_mutants.py): a
wrong value, a NaN, a write past the end, a missing file, a wrong dtype or shape, a modified
input, a handle left changed, and the problems' own mistakes (the dot of the old y, the
transpose flag of a row-major matrix, nothing written where zeros are due), with the
tolerances' edges: half the bound off passes, twice (or thrice) the bound fails. The runners
build with nvcc (test_split_library_build.py) and run end to end on cuemu with a host
stand-in for cuBLAS (test_split_library_emu.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_mutants import (
    SETTINGS,
    Run,
    off,
    only,
    passes,
    perf_checked,
    poison,
    settings,
    settings_changed,
)

SUITE = load_suite("builtin")
SEED = 4_242_017


# ---------------------------------------------------------------------------------------------
# cublas-axpy-dot: y = a x + y, then dot(x, y) with the updated y


def _axpy_dot(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    n, a = int(c["n"]), np.float32(c["a"])
    y = c["y"].copy()
    y[:n] = a * c["x"][:n] + c["y"][:n]
    dot = np.float32(np.dot(c["x"][:n].astype(np.float64), y[:n].astype(np.float64)))
    return {"y": y, "x": c["x"].copy(), "dot": np.array(dot), **settings()}


@pytest.fixture(scope="module")
def axpy(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE["cublas-axpy-dot"], tmp_path_factory.mktemp("axpy"), SEED)


def test_axpy_independent_answer_passes(axpy: Run) -> None:
    positive = axpy.inputs["positive"]
    assert (positive["x"][:-64] >= 0).all() and (positive["y"][:-64] >= 0).all()
    passes(axpy, _axpy_dot)


def test_axpy_mistakes_and_tolerance_edges(axpy: Run) -> None:
    case = "odd"  # n = 4097, a = 3
    c = axpy.inputs[case]
    n = int(c["n"])
    x64, y64 = c["x"][:n].astype(np.float64), c["y"][:n].astype(np.float64)
    ax = np.float64(c["a"]) * x64
    exact_y, y_tol = ax + y64, 2.5e-7 * (np.abs(ax) + np.abs(y64))
    i = int(np.argmax(y_tol))

    def edge(by):
        def mutate(out, c):
            out["y"][i] = off(exact_y[i], y_tol[i], by)
            products = x64 * out["y"][:n].astype(np.float64)
            out["dot"] = np.array(np.float32(products.sum()))

        return mutate

    def dot_edge(by):
        def mutate(out, c):
            products = x64 * out["y"][:n].astype(np.float64)
            out["dot"] = np.array(off(products.sum(), 2e-5 * np.abs(products).sum(), by))

        return mutate

    def old_y(out, c):  # the dot taken before the update
        out["dot"] = np.array(np.float32(np.dot(x64, y64)))

    def x_written(out, c):
        out["x"][3] += 1

    def x_tail(out, c):
        out["x"][n] = 123.0

    def y_tail(out, c):
        out["y"][n + 63] = 0.0

    def nan(out, c):
        out["y"][0] = np.nan

    def dot_f64(out, c):
        out["dot"] = out["dot"].astype(np.float64)

    def no_dot(out, c):
        del out["dot"]

    found = axpy.mutants(
        case,
        _axpy_dot(c),
        {
            "y-within": edge(0.4),
            "y-over": edge(3.0),
            "dot-within": dot_edge(0.5),
            "dot-over": dot_edge(2.0),
            "old-y": old_y,
            "x-written": x_written,
            "x-tail": x_tail,
            "y-tail": y_tail,
            "nan": nan,
            "dot-f64": dot_f64,
            "no-dot": no_dot,
            "settings": settings_changed,
        },
    )
    assert found.pop("y-within") == [] and found.pop("dot-within") == []
    assert found["nan"][1].startswith("dot: ")  # NaN in y: its dot is no number either
    found["nan"] = found["nan"][:1]
    only(
        found,
        {
            "y-over": f"y: 1 of {n} elements wrong; first at index {i}",
            "dot-over": "dot: 1 of 1 elements wrong",
            "old-y": "dot: 1 of 1 elements wrong",
            "x-written": f"x: 1 of {n + 64} elements wrong; first at index 3",
            "x-tail": f"x: 1 of {n + 64} elements wrong; first at index {n}",
            "y-tail": "y past the end: 1 of 64 elements wrong; first at index 63",
            "nan": f"y: 1 of {n} elements wrong; first at index 0: got nan",
            "dot-f64": "dot: dtype <f8, expected <f4",
            "no-dot": "dot.npy is missing",
            "settings": f"{SETTINGS}: 1 of 3 elements wrong; first at index 0: got 1",
        },
    )


def test_axpy_of_nothing_returns_zero_and_writes_nothing(axpy: Run) -> None:
    c = axpy.inputs["empty"]
    assert int(c["n"]) == 0 and c["y"].size == 64

    def dot(out, c):
        out["dot"] = np.array(np.float32(1e-30))

    def wrote(out, c):
        out["y"][0] = 0.0

    found = axpy.mutants("empty", _axpy_dot(c), {"dot": dot, "wrote": wrote})
    only(
        found,
        {
            "dot": "dot: 1 of 1 elements wrong",
            "wrote": "y past the end: 1 of 64 elements wrong; first at index 0",
        },
    )


# ---------------------------------------------------------------------------------------------
# cublas-gemv-rows: y = A x, A row-major


def _gemv(c: dict[str, np.ndarray]) -> np.ndarray:
    rows, cols = int(c["rows"]), int(c["cols"])
    A, x = c["A"].astype(np.float64), c["x"].astype(np.float64)
    y = np.zeros(rows)
    for j in range(cols):  # column by column: y += A[:, j] x[j], A[i, j] at i cols + j
        y += A[j :: max(cols, 1)] * x[j]
    return y.astype(np.float32)


def _gemv_out(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    y = np.concatenate([_gemv(c), poison(np.float32, int(c["guard"]))])
    return {"y": y, "A": c["A"].copy(), "x": c["x"].copy(), **settings()}


@pytest.fixture(scope="module")
def gemv(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE["cublas-gemv-rows"], tmp_path_factory.mktemp("gemv"), SEED)


def test_gemv_independent_answer_passes(gemv: Run) -> None:
    passes(gemv, _gemv_out)


def test_gemv_mistakes_and_tolerance_edges(gemv: Run) -> None:
    case = "r333-c517"
    c = gemv.inputs[case]
    rows, cols = 333, 517
    A, x = c["A"].astype(np.float64), c["x"].astype(np.float64)
    exact = A.reshape(rows, cols) @ x
    tol = 1e-5 * (np.abs(A.reshape(rows, cols)) @ np.abs(x))

    def edge(by):
        def mutate(out, c):
            out["y"][7] = off(exact[7], tol[7], by)

        return mutate

    def op_n(out, c):  # CUBLAS_OP_N with lda = rows: A read as column-major rows x cols
        out["y"][:rows] = (A.reshape(cols, rows).T @ x).astype(np.float32)

    def x_written(out, c):
        out["x"][0] = 0.0

    def guard(out, c):
        out["y"][rows] = 0.0

    def shape(out, c):
        out["y"] = out["y"][:rows]

    found = gemv.mutants(
        case,
        _gemv_out(c),
        {
            "within": edge(0.5),
            "over": edge(2.0),
            "op-n": op_n,
            "x-written": x_written,
            "guard": guard,
            "shape": shape,
            "settings": settings_changed,
        },
    )
    assert found.pop("within") == []
    only(
        found,
        {
            "over": f"y: 1 of {rows} elements wrong; first at index 7",
            "op-n": "y: ",
            "x-written": f"x (modified): 1 of {cols} elements wrong; first at index 0",
            "guard": "y past the end: 1 of 32 elements wrong; first at index 0",
            "shape": f"y: shape ({rows},), expected ({rows + 32},)",
            "settings": f"{SETTINGS}: 1 of 3",
        },
    )


def test_gemv_without_columns_writes_zeros_and_without_rows_nothing(gemv: Run) -> None:
    no_cols = gemv.mutants(
        "r5-c0",
        _gemv_out(gemv.inputs["r5-c0"]),
        {"untouched": lambda out, c: out["y"].__setitem__(slice(0, 5), poison(np.float32, 5))},
    )
    only(no_cols, {"untouched": "y: 5 of 5 elements wrong; first at index 0: got nan"})
    no_rows = gemv.mutants(
        "r0-c5",
        _gemv_out(gemv.inputs["r0-c5"]),
        {"wrote": lambda out, c: out["y"].__setitem__(0, np.float32(0))},
    )
    only(no_rows, {"wrote": "y past the end: 1 of 32 elements wrong; first at index 0"})


@pytest.mark.slow  # 10 products with an 8192 x 8192 matrix
def test_gemv_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        y = (perf["A"].reshape(8192, 8192).astype(np.float64) @ perf["x"]).astype(np.float32)
        return {f"y{it}": y for it in range(int(perf["iters"]))}

    def mutate(outs, perf):
        outs["y9"] = outs["y9"].copy()
        outs["y9"][4095] += 1
        return "y9: 1 of"

    perf_checked(SUITE["cublas-gemv-rows"], tmp_path, SEED, answer, mutate)
