"""bitonic-sort's checker without a GPU: its cases are the old harness's (every power of two to
2^14, then 2^15, 2^16, 2^17, 2^20 and 2^22, six input patterns), drawn fresh per seed; arrays
sorted independently pass; an unsorted array, a wrong multiset, a write past the end, a
missing or mistyped array fail, naming case and array. The runner runs on the CPU emulator in
test_split_kernels_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_kernels import SmallPerf, SplitRun, guarded, rejected

PROBLEM = load_suite("builtin")["bitonic-sort"]
PATTERNS = ["random", "few-distinct", "sorted", "reversed", "all-equal", "extremes"]
SMALL = ["n0", "n1-random", "n16-extremes", "n256-random", "n1024-few-distinct"]


def _sorted(data: np.ndarray, pad: int) -> np.ndarray:
    """Ascending by a Python sort of the values (not numpy's), then the poisoned guard."""
    return guarded(np.array(sorted(data.tolist()), dtype=np.int32), pad)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("bitonic"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    sizes = [1 << lg for lg in range(15)] + [1 << lg for lg in (15, 16, 17, 20, 22)]
    assert list(inputs) == ["n0"] + [f"n{n}-{p}" for n in sizes for p in PATTERNS]
    assert all(len(c["data"]) == int(name.split("-")[0][1:]) for name, c in inputs.items())
    extremes = np.unique(inputs["n4096-extremes"]["data"]).tolist()
    assert extremes == [np.iinfo(np.int32).min, -1, 0, np.iinfo(np.int32).max]
    assert np.all(np.diff(inputs["n4096-sorted"]["data"]) > 0)
    assert np.all(np.diff(inputs["n4096-reversed"]["data"]) < 0)
    assert len(np.unique(inputs["n4096-all-equal"]["data"])) == 1
    again, other = split.redrawn()
    assert np.array_equal(again["n256-random"]["data"], inputs["n256-random"]["data"])
    assert not np.array_equal(other["n256-random"]["data"], inputs["n256-random"]["data"])


@pytest.mark.slow  # sorts 4 M values in Python
def test_independently_sorted_arrays_pass(split: SplitRun, tmp_path: Path) -> None:
    out = {n: {"data": _sorted(c["data"], int(c["guard"]))} for n, c in split.inputs.items()}
    report = split.decide(out, tmp_path)
    assert report == {"passed": True, "cases": 121, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: {"data": _sorted(split.inputs[n]["data"], 64)} for n in SMALL}


def _unsorted(out: dict) -> None:
    data = out["n256-random"]["data"]
    data[[10, 11]] = data[[11, 10]]  # two neighbours swapped: the same multiset, out of order


def _not_a_permutation(out: dict) -> None:
    data = out["n1024-few-distinct"]["data"]
    k = int(np.flatnonzero(np.diff(data[:1024]))[0])
    data[k + 1] = data[k]  # still sorted, one value lost and another doubled


MUTATIONS = {
    "out of order": (_unsorted, "n256-random: data: 2 of 256 elements wrong; first at index 10"),
    "a value lost": (_not_a_permutation, "n1024-few-distinct: data: 1 of 1024 elements wrong"),
    "guard overwritten": (
        lambda out: out["n1-random"]["data"].__setitem__(1, 7),
        "n1-random: data past the end: 1 of 64 elements wrong; first at index 0: got 7",
    ),
    "missing": (lambda out: out["n16-extremes"].pop("data"), "n16-extremes: data.npy is missing"),
    "wrong dtype": (
        lambda out: out["n0"].__setitem__("data", out["n0"]["data"].view(np.uint32)),
        "n0: data: dtype <u4, expected <i4",
    ),
    "guard not sent back": (
        lambda out: out["n256-random"].__setitem__("data", out["n256-random"]["data"][:256]),
        "n256-random: data: shape (256,), expected (320,)",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_array_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    out = _small(split)
    mutate(out)
    assert rejected(split, out, tmp_path, SMALL).startswith(expected)


def test_every_timed_sort_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed sorts, each its own buffer (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 4096, 3))
    want = _sorted(perf.inputs["data"], int(perf.inputs["guard"]))
    outs = {f"data{t}": want.copy() for t in range(3)}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["data2"][:4096] = perf.inputs["data"]  # the last buffer left unsorted
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: data2: ")
