"""sgemm-tiled's checker without a GPU: its cases, answered by an independent NumPy product,
pass ``verify``; every kind of wrong output fails it, naming the case and the array (a wrong
element, a NaN, a write past the end, a wrong dtype or shape, products of TF32-rounded
inputs), and every element of every timed product of the benchmark is checked (A * B on even
calls, B * A on odd ones). The runner runs on the CPU emulator in test_split_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.grading.device_code import fixed_precision
from cudaenv.problems import load_suite
from tests.grading.split_emulated import (
    Inputs,
    SmallPerf,
    another_draw,
    guarded,
    mutant_failures,
)

PROBLEM = load_suite("builtin")["sgemm-tiled"]
SMALL = ["1x1x1", "2x3x1", "3x5x7", "17x33x5", "65x63x3", "129x250x77", "300x200x500-ints"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("sgemm"))


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A row-by-row float32 product: einsum over k, each row on its own."""
    return np.stack([np.einsum("k,kn->n", row, b, dtype=np.float32) for row in a]).astype(
        np.float32
    )


def _answer(case: dict[str, np.ndarray], a=None, b=None) -> dict[str, np.ndarray]:
    a = case["A"] if a is None else a
    b = case["B"] if b is None else b
    return {"C": guarded(_product(a, b), int(case["guard"]))}


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(c) for n, c in run.cases.items() if only is None or n in only}


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    shapes = {(c["A"].shape[0], c["B"].shape[1], c["A"].shape[1]) for c in run.cases.values()}
    assert {(1, 1, 1), (2, 3, 1), (513, 257, 1031), (1024, 1024, 1024), (5000, 37, 11)} <= shapes
    ints = run.cases["300x200x500-ints"]["A"]
    assert np.array_equal(ints, np.round(ints)) and np.abs(ints).max() <= 4
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["3x5x7"]["A"], run.cases["3x5x7"]["A"])


def test_the_split_harness_keeps_the_single_precision_rule() -> None:
    """The runner's shared library names no half-precision header, so the problem's declared
    fp32 work still makes narrower device code a violation (red team: precision-half-sgemm)."""
    assert fixed_precision(PROBLEM) == "fp32"


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _tf32(x: np.ndarray) -> np.ndarray:
    """x rounded to TF32 (10 mantissa bits), as a tensor-core path would read it."""
    bits = x.view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _wrong_value(out: dict, run: Inputs) -> None:
    out["129x250x77"]["C"][250 * 5 + 7] *= 1.001


def _nan(out: dict, run: Inputs) -> None:
    out["3x5x7"]["C"][14] = np.nan  # an element never written keeps its NaN poison


def _guard(out: dict, run: Inputs) -> None:
    out["17x33x5"]["C"][17 * 33] = 0.0


def _dtype(out: dict, run: Inputs) -> None:
    out["1x1x1"]["C"] = out["1x1x1"]["C"].astype(np.float64)


def _shape(out: dict, run: Inputs) -> None:
    out["2x3x1"]["C"] = out["2x3x1"]["C"][:-1]


def _tf32_inputs(out: dict, run: Inputs) -> None:
    case = run.cases["65x63x3"]
    out["65x63x3"] = _answer(case, _tf32(case["A"]), _tf32(case["B"]))


def _transposed_layout(out: dict, run: Inputs) -> None:  # C written column-major
    case = run.cases["17x33x5"]
    c = _product(case["A"], case["B"])
    out["17x33x5"]["C"][: c.size] = c.T.reshape(-1)


MUTATIONS = {
    "wrong value": (
        _wrong_value,
        "129x250x77: C: 1 of 32250 elements wrong; first at index (5, 7)",
    ),
    "NaN": (_nan, "3x5x7: C: 1 of 15 elements wrong; first at index (2, 4): got nan"),
    "guard overwritten": (_guard, "17x33x5: C past the end: 1 of 64 elements wrong"),
    "wrong dtype": (_dtype, "1x1x1: C: dtype <f8, expected <f4"),
    "wrong shape": (_shape, "2x3x1: C: shape (69,), expected (70,)"),
    "TF32 inputs": (_tf32_inputs, "65x63x3: C: "),
    "column-major C": (_transposed_layout, "17x33x5: C: "),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_every_element_of_every_timed_product_is_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: the right products pass; one wrong
    element anywhere in a timed output fails, and so does A * B given for an odd (B * A) call."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 67, 4))
    case = perf.case
    a, b, g = case["A"], case["B"], int(case["guard"])
    good = {
        f"C{r}": _answer({"guard": g}, *((a, b) if r % 2 == 0 else (b, a)))["C"] for r in range(4)
    }
    assert perf.decide(good, "ok")["passed"]
    rng = np.random.default_rng()  # an element no solution could know in advance
    r, i = int(rng.integers(0, 4)), int(rng.integers(0, 67 * 67))
    wrong = {k: v.copy() for k, v in good.items()}
    wrong[f"C{r}"][i] += 0.01
    report = perf.decide(wrong, "one")
    assert report["passed"] is False and report["failures"][0].startswith(f"perf: C{r}: 1 of"), (
        report
    )
    swapped = {**good, "C3": good["C0"]}
    report = perf.decide(swapped, "swapped")
    assert report["passed"] is False and report["failures"][0].startswith("perf: C3: "), report
