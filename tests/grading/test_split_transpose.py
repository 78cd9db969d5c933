"""transpose's checker without a GPU: its cases, answered by NumPy's own transpose, pass
``verify``; every kind of wrong output fails it, naming the case and the array (a swapped pair
of elements, one flipped bit, the untransposed matrix, a write past the end, a wrong dtype or
shape), and every timed call of the benchmark is checked in its own orientation. The runner
runs on the CPU emulator in test_split_emulated.py."""

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

PROBLEM = load_suite("builtin")["transpose"]
SMALL = ["0x5", "5x0", "1x37", "31x33", "64x96", "257x129-offset"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("transpose"))


def _transposed(x: np.ndarray, pad: int) -> np.ndarray:
    out = np.empty((x.shape[1], x.shape[0]), dtype=np.float32)
    for c in range(x.shape[1]):  # out's row c is in's column c
        out[c, :] = x[:, c]
    return guarded(out, pad)


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {
        n: {"out": _transposed(c["in"], int(c["guard"]))}
        for n, c in run.cases.items()
        if only is None or n in only
    }


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    shapes = {c["in"].shape for c in run.cases.values()}
    assert {(0, 5), (5, 0), (0, 0), (1, 1), (3000001, 2), (2, 3000001), (4097, 3001)} <= shapes
    offset = run.cases["257x129-offset"]
    assert (int(offset["in_offset"]), int(offset["out_offset"])) == (1, 3)
    x = run.cases["1023x1025"]["in"]
    assert np.all(np.isfinite(x)) and np.all((np.abs(x) >= 1) & (np.abs(x) < 2))
    bits = np.sort(x.view(np.uint32), axis=None)
    assert np.mean(bits[1:] == bits[:-1]) < 0.1  # values tell places apart
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["31x33"]["in"], run.cases["31x33"]["in"])


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _swap(out: dict, run: Inputs) -> None:
    o = out["31x33"]["out"]
    o[[5, 6]] = o[[6, 5]]


def _bit(out: dict, run: Inputs) -> None:
    o = out["64x96"]["out"].view(np.uint32)
    o[1000] ^= 1


def _untransposed(out: dict, run: Inputs) -> None:
    x = run.cases["257x129-offset"]["in"]
    out["257x129-offset"]["out"][: x.size] = x.reshape(-1)


def _guard(out: dict, run: Inputs) -> None:
    out["0x5"]["out"][0] = 0.0


def _dtype(out: dict, run: Inputs) -> None:
    out["1x37"]["out"] = out["1x37"]["out"].astype(np.float64)


def _shape(out: dict, run: Inputs) -> None:
    out["1x37"]["out"] = out["1x37"]["out"][:-1]


MUTATIONS = {
    "swapped pair": (_swap, "31x33: out (bits): 2 of 1023 elements wrong; first at index 5"),
    "one bit": (_bit, "64x96: out (bits): 1 of 6144 elements wrong; first at index 1000"),
    "not transposed": (_untransposed, "257x129-offset: out (bits): "),
    "guard overwritten": (_guard, "0x5: out past the end: 1 of 64 elements wrong"),
    "wrong dtype": (_dtype, "1x37: out: dtype <f8, expected <f4"),
    "wrong shape": (_shape, "1x37: out: shape (100,), expected (101,)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_every_timed_call_is_checked_in_its_orientation(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: call r views the buffer as A x B (even r)
    or B x A (odd r); the right transposes pass, one of the wrong view fails."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 67, 45, 4))
    case = perf.case
    x, g = case["in"], int(case["guard"])
    views = [x.reshape(67, 45), x.reshape(45, 67)]
    good = {f"out{r}": _transposed(views[r % 2], g) for r in range(4)}
    assert perf.decide(good, "ok")["passed"]
    report = perf.decide({**good, "out3": good["out2"]}, "view")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out3 (bits): "), (
        report
    )
