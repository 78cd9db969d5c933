"""The cuBLAS GEMM problems' checkers without a GPU (cublas-batched-gemm,
cublas-sgemm-bias).

For each: the test stage's cases, answered by NumPy written here (column-major indexing
spelled out, not the checker's own functions), pass ``verify``; every kind of wrong output
fails it, each as its own case of one ``verify`` (tests/grading/split_mutants.py): a wrong
value, a NaN, a write past the end or past the batch, a missing product, a modified input, a
handle left changed, and the problems' own mistakes (a transposed operand, a wrong leading
dimension or batch stride, TF32 rounding, the bias along the wrong axis or missing, k == 0 and
alpha == 0 left unwritten), with the tolerance's edges: half the bound off passes, twice the
bound fails. The runners build with nvcc (test_split_library_build.py) and run end to end on
cuemu with a host stand-in for cuBLAS (test_split_library_emu.py)."""

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
    tf32,
)

SUITE = load_suite("builtin")
SEED = 4_242_017


# ---------------------------------------------------------------------------------------------
# cublas-batched-gemm: C_b = A_b B_b, column-major, packed


def _batched(c: dict[str, np.ndarray], A=None, B=None) -> np.ndarray:
    """C packed column-major: C_b(i, j) at b m n + i + j m, A_b(i, p) at b m k + i + p m,
    B_b(p, j) at b k n + p + j k."""
    m, n, k, batch = (int(c[key]) for key in ("m", "n", "k", "batch"))
    A = (c["A"] if A is None else A).astype(np.float64).reshape(batch, k, m)  # [b, p, i]
    B = (c["B"] if B is None else B).astype(np.float64).reshape(batch, n, k)  # [b, j, p]
    return np.einsum("bpi,bjp->bji", A, B).astype(np.float32).reshape(-1)


def _batched_out(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    guard = poison(np.float32, int(c["m"]) * int(c["n"]))
    C = np.concatenate([_batched(c), guard])
    return {"C": C, "A": c["A"].copy(), "B": c["B"].copy(), **settings()}


@pytest.fixture(scope="module")
def batched(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE["cublas-batched-gemm"], tmp_path_factory.mktemp("batched"), SEED)


def test_batched_independent_answer_passes(batched: Run) -> None:
    assert int(batched.inputs["m8-n8-k8-b0"]["batch"]) == 0
    passes(batched, _batched_out)


def test_batched_mistakes_and_tolerance_edges(batched: Run) -> None:
    case = "m16-n16-k16-b100"  # square: a transposed operand has the right shape
    c = batched.inputs[case]
    m, n, k, batch = 16, 16, 16, 100
    size = batch * m * n
    A4 = c["A"].astype(np.float64).reshape(batch, k, m)
    B4 = c["B"].astype(np.float64).reshape(batch, n, k)
    exact = np.einsum("bpi,bjp->bji", A4, B4).reshape(-1)
    tol = 2e-6 * np.einsum("bpi,bjp->bji", np.abs(A4), np.abs(B4)).reshape(-1)
    at = 12345

    def edge(by):
        def mutate(out, c):
            out["C"][at] = off(exact[at], tol[at], by)

        return mutate

    def transposed(out, c):  # A_b^T B_b: op(A) = T by mistake
        out["C"][:size] = np.einsum("bip,bjp->bji", A4, B4).astype(np.float32).reshape(-1)

    def row_major(out, c):  # A_b read with leading dimension k, as if row-major
        out["C"][:size] = _batched(c, A=c["A"].reshape(batch, m, k).transpose(0, 2, 1).ravel())

    def stride(out, c):  # every product reads the first B
        B0 = np.tile(c["B"][: k * n], batch)
        out["C"][:size] = _batched(c, B=B0)

    def tf32_math(out, c):
        out["C"][:size] = _batched(c, A=tf32(c["A"]), B=tf32(c["B"]))

    def past_batch(out, c):
        out["C"][size + 5] = 0.0

    def a_written(out, c):
        out["A"][0] = 2.0

    def b_written(out, c):
        out["B"][-1] = 2.0

    def unwritten(out, c):  # the last product skipped
        out["C"][size - m * n : size] = poison(np.float32, m * n)

    found = batched.mutants(
        case,
        _batched_out(c),
        {
            "within": edge(0.5),
            "over": edge(2.0),
            "transposed": transposed,
            "row-major": row_major,
            "stride": stride,
            "tf32": tf32_math,
            "past-batch": past_batch,
            "A-written": a_written,
            "B-written": b_written,
            "unwritten": unwritten,
            "settings": settings_changed,
        },
    )
    assert found.pop("within") == []
    only(
        found,
        {
            "over": f"C: 1 of {size} elements wrong; first at index {at}",
            "transposed": "C: ",
            "row-major": "C: ",
            "stride": "C: ",
            "tf32": "C: ",
            "past-batch": f"C past the batch: 1 of {m * n} elements wrong; first at index 5",
            "A-written": f"A (modified): 1 of {batch * m * k} elements wrong; first at index 0",
            "B-written": "B (modified): 1 of",
            "unwritten": f"C: {m * n} of {size} elements wrong; first at index {size - m * n}",
            "settings": f"{SETTINGS}: 1 of 3",
        },
    )


@pytest.mark.slow  # 5 x 8192 products of 32 x 32
def test_batched_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        C = _batched(perf)
        return {f"C{it}": C.copy() for it in range(int(perf["iters"]))}

    def mutate(outs, perf):
        outs["C4"][-1] = -outs["C4"][-1] - 1
        return "C4: 1 of"

    perf_checked(SUITE["cublas-batched-gemm"], tmp_path, SEED, answer, mutate)


# ---------------------------------------------------------------------------------------------
# cublas-sgemm-bias: C = alpha A B + bias, column-major, the bias along the rows


def _gemm_bias(c: dict[str, np.ndarray], A=None, B=None, bias=None) -> np.ndarray:
    m, n, k = int(c["m"]), int(c["n"]), int(c["k"])
    A = np.asarray(c["A"] if A is None else A, dtype=np.float64).reshape(m, k, order="F")
    B = np.asarray(c["B"] if B is None else B, dtype=np.float64).reshape(k, n, order="F")
    bias = (c["bias"] if bias is None else bias).astype(np.float64)
    C = np.float64(c["alpha"]) * (A @ B) + bias[:, None]
    return C.astype(np.float32).ravel(order="F")


def _gemm_bias_out(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    C = np.concatenate([_gemm_bias(c), poison(np.float32, int(c["guard"]))])
    inputs = {name: c[name].copy() for name in ("A", "B", "bias")}
    return {"C": C, **inputs, **settings()}


@pytest.fixture(scope="module")
def sgemm(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE["cublas-sgemm-bias"], tmp_path_factory.mktemp("sgemm"), SEED)


def test_sgemm_independent_answer_passes(sgemm: Run) -> None:
    assert int(sgemm.inputs["m65-n67-k0"]["k"]) == 0
    assert float(sgemm.inputs["m96-n80-k40"]["alpha"]) == 0.0
    passes(sgemm, _gemm_bias_out)


def test_sgemm_mistakes_and_tolerance_edges(sgemm: Run) -> None:
    case = "m128-n64-k256"  # alpha = -0.75
    c = sgemm.inputs[case]
    m, n, k = 128, 64, 256
    A = c["A"].astype(np.float64).reshape(m, k, order="F")
    B = c["B"].astype(np.float64).reshape(k, n, order="F")
    alpha, bias = np.float64(c["alpha"]), c["bias"].astype(np.float64)
    exact = (alpha * (A @ B) + bias[:, None]).ravel(order="F")
    tol = 2e-6 * (abs(alpha) * (np.abs(A) @ np.abs(B)) + np.abs(bias)[:, None]).ravel(order="F")
    at = 777

    def edge(by):
        def mutate(out, c):
            out["C"][at] = off(exact[at], tol[at], by)

        return mutate

    def wrong_ld(out, c):  # A read with leading dimension k (row-major)
        out["C"][: m * n] = _gemm_bias(c, A=c["A"].reshape(m, k).ravel(order="F"))

    def b_transposed(out, c):  # B read row-major (op(B) = T with the wrong shape in mind)
        out["C"][: m * n] = _gemm_bias(c, B=c["B"].reshape(k, n).ravel(order="F"))

    def bias_per_column(out, c):  # bias[j] added to column j (bias indexed the wrong way)
        C = out["C"][: m * n].reshape(m, n, order="F") - c["bias"][:, None]
        out["C"][: m * n] = (C + c["bias"][:n][None, :]).ravel(order="F")

    def no_bias(out, c):
        out["C"][: m * n] = _gemm_bias(c, bias=np.zeros(m, np.float32))

    def tf32_math(out, c):
        out["C"][: m * n] = _gemm_bias(c, A=tf32(c["A"]), B=tf32(c["B"]))

    def bias_written(out, c):
        out["bias"][1] = 0.0

    def guard(out, c):
        out["C"][m * n + 63] = 0.0

    found = sgemm.mutants(
        case,
        _gemm_bias_out(c),
        {
            "within": edge(0.5),
            "over": edge(2.0),
            "wrong-ld": wrong_ld,
            "b-transposed": b_transposed,
            "bias-per-column": bias_per_column,
            "no-bias": no_bias,
            "tf32": tf32_math,
            "bias-written": bias_written,
            "guard": guard,
            "settings": settings_changed,
        },
    )
    assert found.pop("within") == []
    only(
        found,
        {
            "over": f"C: 1 of {m * n} elements wrong; first at index {at}",
            "wrong-ld": "C: ",
            "b-transposed": "C: ",
            "bias-per-column": "C: ",
            "no-bias": "C: ",
            "tf32": "C: ",
            "bias-written": f"bias (modified): 1 of {m} elements wrong; first at index 1",
            "guard": "C past the end: 1 of 64 elements wrong; first at index 63",
            "settings": f"{SETTINGS}: 1 of 3",
        },
    )


def test_sgemm_without_k_or_alpha_is_the_bias(sgemm: Run) -> None:
    """k == 0 and alpha == 0: C is the broadcast bias; left unwritten or zero, it fails."""
    for case in ("m65-n67-k0", "m96-n80-k40"):
        c = sgemm.inputs[case]
        m, n = int(c["m"]), int(c["n"])
        right = _gemm_bias_out(c)
        assert np.array_equal(right["C"][: m * n], np.tile(c["bias"], n))

        def unwritten(out, c, size=m * n):
            out["C"][:size] = poison(np.float32, size)

        def zeros(out, c, size=m * n):
            out["C"][:size] = 0.0

        found = sgemm.mutants(case, right, {"unwritten": unwritten, "zeros": zeros})
        only(
            found,
            {
                "unwritten": f"C: {m * n} of {m * n} elements wrong; first at index 0: got nan",
                "zeros": "C: ",
            },
        )


@pytest.mark.slow  # five 4096^3 products (the checker's reference is a float64 GEMM)
def test_sgemm_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        m, n, k = 4096, 4096, 4096
        A = perf["A"].reshape(m, k, order="F")
        B = perf["B"].reshape(k, n, order="F")
        C = np.float32(perf["alpha"]) * (A @ B) + perf["bias"][:, None]  # float32 math
        C = C.ravel(order="F")
        return {f"C{it}": C for it in range(int(perf["iters"]))}

    def mutate(outs, perf):
        outs["C2"] = outs["C2"].copy()
        outs["C2"][4096 * 4096 - 1] = np.nan
        return "C2: 1 of"

    perf_checked(SUITE["cublas-sgemm-bias"], tmp_path, SEED, answer, mutate)
