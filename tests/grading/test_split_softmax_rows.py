"""softmax-rows's checker without a GPU: its cases, answered by an independent float32 NumPy
softmax, pass ``verify``; every kind of wrong output fails it, naming the case and the array
(a wrong element, a NaN, a write past the end, a modified input, a wrong dtype or shape, a
masked entry that is not 0, rows exponentiated without their maximum, a serial float row
sum), and every timed call of the benchmark is checked. The runner runs on the CPU emulator in
test_split_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_emulated import (
    Inputs,
    SmallPerf,
    another_draw,
    guarded,
    mutant_failures,
)

PROBLEM = load_suite("builtin")["softmax-rows"]
SMALL = [
    "empty-0x5", "uniform-1x1", "uniform-3x5", "uniform-5x33", "uniform-2x262144",
    "shifted-40x1537", "masked-123x777", "one-hot-33x2500", "constant-9x10007",
]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("softmax"))


def _softmax(x: np.ndarray, shift: bool = True) -> np.ndarray:
    """In float32, a row at a time: exp(x - max) over its (pairwise) float32 sum."""
    rows = []
    for row in x:
        e = np.exp(row - row.max()) if shift else np.exp(row)
        rows.append(e / e.sum(dtype=np.float32))
    return np.array(rows, dtype=np.float32).reshape(x.shape)


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = case["in"]
    return {"out": guarded(_softmax(x), int(case["guard"])), "in_after": x.copy()}


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(c) for n, c in run.cases.items() if only is None or n in only}


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    shapes = {c["in"].shape for c in run.cases.values()}
    assert {(0, 5), (1, 1), (2, 262144), (70001, 3), (4096, 1)} <= shapes
    for c in run.cases.values():  # every row has a finite entry; masked ones are -inf
        x = c["in"]
        assert not np.isnan(x).any() and not np.isposinf(x).any()
        assert np.isfinite(x).any(axis=1).all()
    assert np.isneginf(run.cases["masked-123x777"]["in"]).mean() > 0.2
    assert np.abs(run.cases["shifted-40x1537"]["in"]).max() > 800  # exp without the max overflows
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["uniform-3x5"]["in"], run.cases["uniform-3x5"]["in"])


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _wrong_value(out: dict, run: Inputs) -> None:
    out["uniform-5x33"]["out"][40] *= 1.001


def _nan(out: dict, run: Inputs) -> None:
    out["uniform-3x5"]["out"][14] = np.nan


def _guard(out: dict, run: Inputs) -> None:
    out["uniform-3x5"]["out"][15] = 0.0


def _input_modified(out: dict, run: Inputs) -> None:
    out["one-hot-33x2500"]["in_after"][3, 3] = 0.0


def _dtype(out: dict, run: Inputs) -> None:
    out["uniform-1x1"]["out"] = out["uniform-1x1"]["out"].astype(np.float64)


def _shape(out: dict, run: Inputs) -> None:
    out["uniform-1x1"]["out"] = out["uniform-1x1"]["out"][:-1]


def _masked_not_zero(out: dict, run: Inputs) -> None:
    x = run.cases["masked-123x777"]["in"]
    out["masked-123x777"]["out"][int(np.flatnonzero(np.isneginf(x))[0])] = 1e-8


def _no_max(out: dict, run: Inputs) -> None:  # exp(x) overflows on the shifted rows
    case = run.cases["shifted-40x1537"]
    with np.errstate(over="ignore", invalid="ignore"):
        out["shifted-40x1537"]["out"] = guarded(_softmax(case["in"], shift=False), 64)


def _serial_sum(out: dict, run: Inputs) -> None:  # one float accumulator along a 2^18 row
    x = run.cases["uniform-2x262144"]["in"]
    rows = []
    for row in x:
        e = np.exp(row - row.max())
        rows.append(e / np.cumsum(e, dtype=np.float32)[-1])
    out["uniform-2x262144"]["out"] = guarded(np.array(rows, dtype=np.float32), 64)


MUTATIONS = {
    "wrong value": (_wrong_value, "uniform-5x33: out: 1 of 165 elements wrong; first at index 40"),
    "NaN": (_nan, "uniform-3x5: out: 1 of 15 elements wrong; first at index 14: got nan"),
    "guard overwritten": (_guard, "uniform-3x5: out past the end: 1 of 64 elements wrong"),
    "input modified": (_input_modified, "one-hot-33x2500: in (modified by the call): 1 of"),
    "wrong dtype": (_dtype, "uniform-1x1: out: dtype <f8, expected <f4"),
    "wrong shape": (_shape, "uniform-1x1: out: shape (64,), expected (65,)"),
    "masked entry not 0": (_masked_not_zero, "masked-123x777: out: 1 of 95571 elements wrong"),
    "no row maximum": (_no_max, "shifted-40x1537: out: "),
    "serial float sum": (_serial_sum, "uniform-2x262144: out: "),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: call r reads rows r .. r + rows - 1;
    every output passes, one wrong element of the last fails, and so does rows 0.. for call 1."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 37, 300, 4))
    case = perf.case
    x, g = case["in"], int(case["guard"])
    good = {f"out{r}": guarded(_softmax(x[r : r + 37]), g) for r in range(4)}
    assert perf.decide(good, "ok")["passed"]
    wrong = {k: v.copy() for k, v in good.items()}
    wrong["out3"][37 * 300 - 1] = 0.5
    report = perf.decide(wrong, "one")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out3: 1 of"), (
        report
    )
    report = perf.decide({**good, "out1": good["out0"]}, "window")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out1: "), report
