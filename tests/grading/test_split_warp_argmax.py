"""warp-argmax's checker without a GPU: its cases, answered by an independent NumPy argmax,
pass ``verify``; every kind of wrong output fails it, naming the case and the array (a later
index among equal values, +0.0 for -0.0, a segment's index off by one, a NaN value, a write
past either array, a wrong dtype or shape), and every timed call of the benchmark is checked.
The runner runs on the CPU emulator in test_split_emulated.py."""

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

PROBLEM = load_suite("builtin")["warp-argmax"]
SMALL = ["n0-random", "n33-many-ties", "n100-signed-zeros", "n1000-random", "n65-extremes"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("argmax"))


def _argmax(x: np.ndarray) -> np.ndarray:
    """Per segment: its maximum (maximum.reduceat), then the first place holding it."""
    starts = np.arange(0, x.size, 32)
    if not starts.size:
        return np.zeros(0, dtype=np.int32)
    best = np.maximum.reduceat(x, starts)
    hit = x == np.repeat(best, np.diff(np.append(starts, x.size)))
    first = np.minimum.reduceat(np.where(hit, np.arange(x.size), x.size), starts)
    return first.astype(np.int32)


def _answer(case: dict[str, np.ndarray], suffix: str = "") -> dict[str, np.ndarray]:
    x, pad = case["x"], int(case["guard"])
    arg = _argmax(x)
    return {f"seg_arg{suffix}": guarded(arg, pad), f"seg_max{suffix}": guarded(x[arg], pad)}


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(c) for n, c in run.cases.items() if only is None or n in only}


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    assert len(run.cases) == 14 * 7 + 2
    sizes = {c["x"].size for c in run.cases.values()}
    assert {0, 1, 31, 33, 65, (1 << 20) + 5, (1 << 24) + 3, (1 << 24) + 29} <= sizes
    zeros = run.cases["n1000-signed-zeros"]["x"]
    assert np.any(np.signbit(zeros) & (zeros == 0)) and np.any(~np.signbit(zeros) & (zeros == 0))
    assert np.finfo(np.float32).max in run.cases["n1000-extremes"]["x"]
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["n1000-random"]["x"], run.cases["n1000-random"]["x"])


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _later_tie(out: dict, run: Inputs) -> None:  # the last of equal values instead of the first
    x = run.cases["n33-many-ties"]["x"][:32]
    out["n33-many-ties"]["seg_arg"][0] = int(np.flatnonzero(x == x.max())[-1])


def _plus_zero(out: dict, run: Inputs) -> None:  # a tie of -0.0 and +0.0 won by the other zero
    value = out["n100-signed-zeros"]["seg_max"]
    s = int(np.flatnonzero(value[:4] == 0)[0])
    value[s] = -value[s]


def _off_by_one(out: dict, run: Inputs) -> None:
    out["n1000-random"]["seg_arg"][3] += 1


def _nan(out: dict, run: Inputs) -> None:
    out["n1000-random"]["seg_max"][30] = np.nan


def _guard(out: dict, run: Inputs) -> None:
    out["n0-random"]["seg_arg"][0] = 0


def _dtype(out: dict, run: Inputs) -> None:
    out["n65-extremes"]["seg_arg"] = out["n65-extremes"]["seg_arg"].astype(np.int64)


def _shape(out: dict, run: Inputs) -> None:
    out["n65-extremes"]["seg_max"] = out["n65-extremes"]["seg_max"][:-1]


MUTATIONS = {
    "later of equal values": (
        _later_tie,
        "n33-many-ties: seg_arg: 1 of 2 elements wrong; first at index 0",
    ),
    "signed zero": (_plus_zero, "n100-signed-zeros: seg_max (bits): 1 of 4 elements wrong"),
    "index off by one": (
        _off_by_one,
        "n1000-random: seg_arg: 1 of 32 elements wrong; first at index 3",
    ),
    "NaN": (_nan, "n1000-random: seg_max (bits): 1 of 32 elements wrong; first at index 30"),
    "guard overwritten": (_guard, "n0-random: seg_arg past the end: 1 of 64 elements wrong"),
    "wrong dtype": (_dtype, "n65-extremes: seg_arg: dtype <i8, expected <i4"),
    "wrong shape": (_shape, "n65-extremes: seg_max: shape (66,), expected (67,)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: every call's pair passes; one wrong index
    in the last call fails."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 32 * 500, 5))
    case = perf.case
    good = {k: v for t in range(5) for k, v in _answer(case.inputs, str(t)).items()}
    ok = perf.decide(good, "ok")
    assert ok["passed"], ok
    good["seg_arg4"][499] -= 1
    bad = perf.decide(good, "bad")
    assert bad["passed"] is False and bad["failures"][0].startswith("perf: seg_arg4: 1 of 500"), bad
