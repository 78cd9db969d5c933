"""compact-positive's checker without a GPU: its cases are the old harness's (sizes on both
sides of block multiples up to 2^24 + 3, six value patterns, small again after large calls),
drawn fresh per seed; compactions computed independently pass; a wrong count, kept zeros, a
lost subnormal, an order not kept, a changed bit, a write past n, a missing or mistyped output
fail, naming case and array. The runner runs on the CPU emulator in
test_split_kernels_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_kernels import (
    SmallPerf,
    SplitRun,
    mutant_rejected,
    poisoned,
)

PROBLEM = load_suite("builtin")["compact-positive"]
SMALL = ["n0-half", "n33-zeros-and-tiny", "n257-alternating", "n4097-sparse", "n1000-half"]


def _compact(x: np.ndarray, keep=lambda x: x > 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The kept values in order, by their indices (np.nonzero), and their count."""
    kept = x[np.nonzero(keep(x))[0]]
    return kept, np.array(len(kept), dtype=np.int32)


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    kept, count = _compact(case["in"])
    return {"count": count, "out": kept, "guard": poisoned(np.float32, int(case["guard"]))}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("compact"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    names = list(inputs)
    assert len(names) == 1 + 14 * 6 + 4
    assert names[0] == "n0-half" and names[-2:] == ["n12345-half", "n0-all-positive"]
    assert {"n16777217-half", "n16777219-zeros-and-tiny", "n1048653-alternating"} <= set(names)
    tiny = inputs["n65537-zeros-and-tiny"]["in"]
    assert np.any((tiny == 0) & np.signbit(tiny)) and np.any((tiny == 0) & ~np.signbit(tiny))
    assert np.any((tiny > 0) & (tiny < np.finfo(np.float32).tiny))  # positive subnormals
    assert not np.any(inputs["n65537-none-positive"]["in"] > 0)
    assert np.all(inputs["n65537-all-positive"]["in"] > 0)
    share = np.mean(inputs["n65537-sparse"]["in"] > 0)
    assert 0.005 < share < 0.02
    again, other = split.redrawn()
    assert np.array_equal(again["n1000-half"]["in"], inputs["n1000-half"]["in"])
    assert not np.array_equal(other["n1000-half"]["in"], inputs["n1000-half"]["in"])


def test_independent_compactions_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 89, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _kept_zeros(out: dict, inputs: dict) -> None:
    kept, count = _compact(inputs["n33-zeros-and-tiny"]["in"], keep=lambda x: x >= 0.0)
    out["n33-zeros-and-tiny"] |= {"out": kept, "count": count}


def _lost_subnormals(out: dict, inputs: dict) -> None:
    x = inputs["n33-zeros-and-tiny"]["in"]
    kept, count = _compact(x, keep=lambda x: x > np.finfo(np.float32).tiny)  # flushed to zero
    out["n33-zeros-and-tiny"] |= {"out": kept, "count": count}


def _order(out: dict, inputs: dict) -> None:
    kept = out["n1000-half"]["out"]
    kept[[0, 1]] = kept[[1, 0]]


def _one_bit(out: dict, inputs: dict) -> None:
    kept = out["n257-alternating"]["out"]
    kept[5] = np.nextafter(kept[5], np.float32(np.inf))


MUTATIONS = {
    "count off by one": (
        lambda out, _: out["n4097-sparse"].__setitem__("count", out["n4097-sparse"]["count"] + 1),
        "n4097-sparse: count: 1 of 1 elements wrong",
    ),
    "zeros kept": (_kept_zeros, "n33-zeros-and-tiny: count: 1 of 1 elements wrong"),
    "subnormals lost": (_lost_subnormals, "n33-zeros-and-tiny: count: 1 of 1 elements wrong"),
    "order not kept": (_order, "n1000-half: out (bits): 2 of"),
    "a bit changed": (
        _one_bit,
        "n257-alternating: out (bits): 1 of 128 elements wrong; first at index 5",
    ),
    "written past n": (
        lambda out, _: out["n0-half"]["guard"].__setitem__(0, 1.0),
        "n0-half: out past n: 1 of 64 elements wrong; first at index 0: got 1.0",
    ),
    "missing count": (
        lambda out, _: out["n1000-half"].pop("count"),
        "n1000-half: count.npy is missing",
    ),
    "count of another dtype": (
        lambda out, _: out["n0-half"].__setitem__("count", np.int64(0)),
        "n0-half: count: dtype <i8, expected <i4",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_the_cases_hold_signed_zeros_and_subnormals_that_matter(split: SplitRun) -> None:
    """The mutations above fail for a reason: that case has zeros and positive subnormals."""
    x = split.inputs["n33-zeros-and-tiny"]["in"]
    assert np.any(x == 0) and np.any((x > 0) & (x < np.finfo(np.float32).tiny))


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed calls, each its own output and count (the perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 10007, 3))
    kept, count = _compact(perf.inputs["in"])
    outs = {"count": np.full(3, count, np.int32)}
    for t in range(3):
        outs |= {f"out{t}": kept.copy(), f"guard{t}": poisoned(np.float32, 64)}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["out2"][-1] = np.float32(-1.0)  # the last kept value of the last call
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out2 (bits)")
