"""spmv-csr's checker without a GPU: its matrices are valid CSR (distinct columns per row, in no
particular order, the promised row lengths), its cases answered by an independent NumPy
product pass ``verify``, and every kind of wrong output fails it, naming the case and the
array (a wrong row, a NaN left in a row never written, an empty row not 0, a write past the
end, an integer case off by one ulp, a wrong dtype or shape); every timed call of the
benchmark is checked. The runner runs on the CPU emulator in test_split_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_emulated import (
    Inputs,
    SmallPerf,
    check_module,
    guarded,
    mutant_failures,
)

PROBLEM = load_suite("builtin")["spmv-csr"]
SMALL = ["no-rows", "1x1", "all-rows-empty", "single-column", "short-rows", "odd-row-count"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("spmv"))


def _spmv(case: dict[str, np.ndarray]) -> np.ndarray:
    """Row sums as differences of one float64 running sum over the entries, rounded to float."""
    prod = case["vals"].astype(np.float64) * case["x"].astype(np.float64)[case["col_idx"]]
    running = np.concatenate([[0.0], np.cumsum(prod)])
    ptr = case["row_ptr"]
    return (running[ptr[1:]] - running[ptr[:-1]]).astype(np.float32)


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {
        n: {"y": guarded(_spmv(c), int(c["guard"]))}
        for n, c in run.cases.items()
        if only is None or n in only
    }


def test_the_matrices_are_valid_csr_with_the_promised_rows(run: Inputs, tmp_path: Path) -> None:
    for name, c in run.cases.items():
        ptr, col, n_cols = c["row_ptr"].astype(np.int64), c["col_idx"], c["x"].size
        assert ptr[0] == 0 and np.all(np.diff(ptr) >= 0) and ptr[-1] == col.size, name
        assert col.size == c["vals"].size and np.all((col >= 0) & (col < n_cols)), name
        rows = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        keys = np.sort(rows * n_cols + col)
        assert not np.any(keys[1:] == keys[:-1]), name  # distinct within a row
    lengths = np.diff(run.cases["power-law"]["row_ptr"])
    assert lengths.max() > 2000 and np.mean(lengths < 6) > 0.85
    dense = run.cases["one-dense-row"]["col_idx"]
    assert np.array_equal(np.sort(dense), np.arange(200000)) and not np.all(np.diff(dense) > 0)
    medium = run.cases["medium-random"]
    first = medium["col_idx"][: medium["row_ptr"][200]]
    row_of = np.repeat(np.arange(200), np.diff(medium["row_ptr"][:201]))
    unsorted = [
        np.any(np.diff(first[row_of == r]) < 0) for r in range(200) if np.sum(row_of == r) > 3
    ]
    assert np.mean(unsorted) > 0.9  # in no particular order
    assert bool(run.cases["power-law"]["exact"]) and not bool(medium["exact"])
    module = check_module(PROBLEM, tmp_path)
    name, rows, cols, ints, lengths = module.TESTS[4]
    rng = np.random.default_rng(1)
    other = module.matrix(rng, rows, cols, ints, lengths(rng, rows))
    assert name == "short-rows" and not np.array_equal(other["vals"], run.cases[name]["vals"])


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _wrong_value(out: dict, run: Inputs) -> None:
    out["short-rows"]["y"][10] += 0.01


def _nan(out: dict, run: Inputs) -> None:  # a row never written keeps its NaN poison
    out["short-rows"]["y"][999] = np.nan


def _empty_row(out: dict, run: Inputs) -> None:
    out["all-rows-empty"]["y"][7] = 1e-5  # the tolerance of random data is 1e-6 there


def _guard(out: dict, run: Inputs) -> None:
    out["1x1"]["y"][1] = 0.0


def _ulp(out: dict, run: Inputs) -> None:  # exact data: one ulp off fails
    y = out["odd-row-count"]["y"]
    i = int(np.flatnonzero(y[:777] != 0)[0])
    y[i] = np.nextafter(y[i], np.float32(np.inf))


def _dtype(out: dict, run: Inputs) -> None:
    out["single-column"]["y"] = out["single-column"]["y"].astype(np.float64)


def _shape(out: dict, run: Inputs) -> None:
    out["no-rows"]["y"] = out["no-rows"]["y"][:-1]


MUTATIONS = {
    "wrong value": (_wrong_value, "short-rows: y: 1 of 1000 elements wrong; first at index 10"),
    "NaN": (_nan, "short-rows: y: 1 of 1000 elements wrong; first at index 999: got nan"),
    "empty row not 0": (_empty_row, "all-rows-empty: y: 1 of 50 elements wrong; first at index 7"),
    "guard overwritten": (_guard, "1x1: y past the end: 1 of 64 elements wrong"),
    "exact data off by one ulp": (_ulp, "odd-row-count: y: 1 of 777 elements wrong"),
    "wrong dtype": (_dtype, "single-column: y: dtype <f8, expected <f4"),
    "wrong shape": (_shape, "no-rows: y: shape (63,), expected (64,)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size (0..63 entries a row): every y passes, one
    wrong row in the last call's y fails it."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 3000, 5))
    case = perf.case
    assert 25 < case["col_idx"].size / 3000 < 38  # about 31.5 entries a row
    good = {f"y{t}": guarded(_spmv(case.inputs), int(case["guard"])) for t in range(5)}
    ok = perf.decide(good, "ok")
    assert ok["passed"], ok
    good["y4"][1234] += 0.5
    bad = perf.decide(good, "bad")
    assert bad["passed"] is False and bad["failures"][0].startswith("perf: y4: 1 of 3000"), bad
