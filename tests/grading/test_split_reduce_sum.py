"""reduce-sum's checker without a GPU: its cases are the old harness's (0 to 2^26 elements,
misaligned starts, all ones, cancelling values, one large value among tiny ones), drawn fresh
per seed; sums computed independently (numpy's pairwise float32 sum, like a tree reduction)
pass; a missing element, 2^26 values added one by one into one float, a NaN left in *out, a
non-zero empty sum, a write past *out, a missing or mistyped result fail, naming case and
array. The runner runs on the CPU emulator in test_split_kernels_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_kernels import (
    SmallPerf,
    SplitRun,
    guarded,
    mutant_rejected,
    rejected,
)

PROBLEM = load_suite("builtin")["reduce-sum"]
SMALL = ["empty", "single", "uniform-1025", "misaligned-3", "spike"]


def _summed(case: dict[str, np.ndarray]) -> np.ndarray:
    start, n = int(case["offset"]), int(case["n"])
    return case["x"][start : start + n]


def _answer(case: dict[str, np.ndarray], total=None) -> dict[str, np.ndarray]:
    s = np.sum(_summed(case), dtype=np.float32) if total is None else total
    return {"out": guarded(np.array([s], np.float32), int(case["guard"]))}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("reduce"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    assert len(inputs) == 2 + 11 + 5 + 1
    assert int(inputs["empty"]["n"]) == 0 and int(inputs["huge"]["n"]) == 1 << 26
    assert (int(inputs["misaligned-1"]["offset"]), int(inputs["misaligned-1"]["n"])) == (1, 1000003)
    assert (int(inputs["misaligned-3"]["offset"]), int(inputs["misaligned-3"]["n"])) == (3, 777777)
    assert np.all(inputs["all-ones"]["x"] == 1.0) and len(inputs["all-ones"]["x"]) == 1 << 24
    spike = inputs["spike"]["x"]
    assert np.count_nonzero(spike == 1000.0) == 1 and np.abs(spike[spike != 1000.0]).max() <= 1e-3
    again, other = split.redrawn()
    assert np.array_equal(again["uniform-1025"]["x"], inputs["uniform-1025"]["x"])
    assert not np.array_equal(other["uniform-1025"]["x"], inputs["uniform-1025"]["x"])


def test_independent_sums_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 19, "failures": []}


def test_one_float_accumulator_over_2_26_values_fails(split: SplitRun, tmp_path: Path) -> None:
    """The prompt's example: adding the values one at a time into one float stagnates."""
    out = {n: _answer(c) for n, c in split.inputs.items()}
    one_by_one = np.cumsum(split.inputs["huge"]["x"], dtype=np.float32)[-1]
    out["huge"] = _answer(split.inputs["huge"], one_by_one)
    assert rejected(split, out, tmp_path, None).startswith("huge: *out: 1 of 1 elements wrong")


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _one_missing(out: dict, inputs: dict) -> None:
    x = _summed(inputs["spike"])
    out["spike"] = _answer(inputs["spike"], np.sum(x[x != 1000.0], dtype=np.float32))


MUTATIONS = {
    "the spike left out": (_one_missing, "spike: *out: 1 of 1 elements wrong"),
    "never written": (
        lambda out, _: out["uniform-1025"]["out"].__setitem__(0, np.nan),
        "uniform-1025: *out: 1 of 1 elements wrong; first at index 0: got nan",
    ),
    "empty sum not zero": (
        lambda out, _: out["empty"]["out"].__setitem__(0, 1e-30),
        "empty: *out: 1 of 1 elements wrong",
    ),
    "written past *out": (
        lambda out, _: out["single"]["out"].__setitem__(1, 0.0),
        "single: out past the result: 1 of 64 elements wrong; first at index 0",
    ),
    "missing": (lambda out, _: out["single"].pop("out"), "single: out.npy is missing"),
    "double result": (
        lambda out, _: out["spike"].__setitem__("out", out["spike"]["out"].astype(np.float64)),
        "spike: out: dtype <f8, expected <f4",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_sum_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's 8 timed calls, call r on x[4r : 4r + N - 8r - 1], each its own result
    (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 100003, 8))
    x = perf.inputs["x"]
    sums = [np.sum(x[4 * r : 4 * r + len(x) - 8 * r - 1], dtype=np.float32) for r in range(8)]
    out = guarded(np.array(sums, np.float32), int(perf.inputs["guard"]))
    assert perf.decide({"out": out}, "ok")["passed"] is True
    out[7] = np.sum(x, dtype=np.float32)  # the last call summed the whole array
    report = perf.decide({"out": out}, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out[7]: ")
