"""atomic-minmax's checker without a GPU: its cases cover what the old harness checked (empty
inputs, 1 to 2^22 groups, uniform, single-key, sorted-run and hot-key keys, INT_MIN/INT_MAX
values), drawn fresh per seed; tables computed independently (a sort and segment reductions,
not the checker's scatter) pass; every kind of wrong table fails, naming case and array. The
runner runs on the CPU emulator in test_split_kernels_emulated.py."""

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
)

PROBLEM = load_suite("builtin")["atomic-minmax"]
INT_MIN, INT_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max
SMALL = ["empty-one-group", "empty-many-groups", "single", "one-group", "seven-groups"]
SMALL += ["extreme-values"]


def _tables(keys: np.ndarray, vals: np.ndarray, g: int, pad: int) -> dict[str, np.ndarray]:
    """gmin and gmax with their poisoned guard: keys sorted, then each run of equal keys
    reduced (groups without elements keep INT_MAX / INT_MIN)."""
    gmin, gmax = np.full(g, INT_MAX, np.int32), np.full(g, INT_MIN, np.int32)
    if len(keys):
        order = np.argsort(keys, kind="stable")
        k, v = keys[order], vals[order]
        starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
        gmin[k[starts]] = np.minimum.reduceat(v, starts)
        gmax[k[starts]] = np.maximum.reduceat(v, starts)
    return {"gmin": guarded(gmin, pad), "gmax": guarded(gmax, pad)}


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    g, pad = int(case["num_groups"]), int(case["guard"])
    return _tables(case["keys"], case["vals"], g, pad)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("minmax"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    shapes = {(len(c["keys"]), int(c["num_groups"])) for c in inputs.values()}
    assert {(0, 1), (0, 5000), (1, 1), (1 << 24, 1000), (1000, 1 << 22)} <= shapes
    assert {(1 << 20, 4096), (1 << 20, 4097), ((1 << 22) + 9, 100000)} <= shapes
    assert len(inputs) == 14
    assert np.unique(inputs["all-in-last-group"]["keys"]).tolist() == [299]
    assert np.all(np.diff(inputs["sorted-runs"]["keys"]) >= 0)
    extremes = set(np.unique(inputs["extreme-values"]["vals"]).tolist())
    assert extremes == {INT_MIN, INT_MIN + 1, 0, INT_MAX - 1, INT_MAX}
    hot = np.bincount(inputs["hot-keys"]["keys"], minlength=2048)
    assert hot[:3].sum() > 0.8 * hot.sum()  # seven in eight elements on three keys
    for c in inputs.values():  # garbage below / above almost every value
        assert int(c["min_fill"]) < -(1 << 30) and int(c["max_fill"]) > 1 << 30
    again, other = split.redrawn()
    assert np.array_equal(again["seven-groups"]["vals"], inputs["seven-groups"]["vals"])
    assert not np.array_equal(other["seven-groups"]["vals"], inputs["seven-groups"]["vals"])


def test_independent_tables_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 14, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _garbage_left(out: dict, inputs: dict) -> None:
    # a group without elements keeps the garbage it had (the table was never initialised)
    out["empty-many-groups"]["gmin"][10] = inputs["empty-many-groups"]["min_fill"]


MUTATIONS = {
    "wrong minimum": (
        lambda out, _: out["seven-groups"]["gmin"].__setitem__(3, 5000),
        "seven-groups: gmin: 1 of 7 elements wrong; first at index 3: got 5000",
    ),
    "garbage left": (
        _garbage_left,
        "empty-many-groups: gmin: 1 of 5000 elements wrong; first at index 10",
    ),
    "guard overwritten": (
        lambda out, _: out["one-group"]["gmax"].__setitem__(1, 0),
        "one-group: gmax past the end: 1 of 64 elements wrong; first at index 0",
    ),
    "missing table": (lambda out, _: out["single"].pop("gmax"), "single: gmax.npy is missing"),
    "wrong dtype": (
        lambda out, _: out["single"].__setitem__("gmin", out["single"]["gmin"].astype(np.int64)),
        "single: gmin: dtype <i8, expected <i4",
    ),
    "guard not sent back": (
        lambda out, _: out["extreme-values"].__setitem__(
            "gmax", out["extreme-values"]["gmax"][:13]
        ),
        "extreme-values: gmax: shape (13,), expected (77,)",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_table_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed calls, each its own tables (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 5000, 37, 3))
    inputs = perf.inputs
    tables = _tables(inputs["keys"], inputs["vals"], 37, int(inputs["guard"]))
    outs = {f"{name}{t}": arr.copy() for t in range(3) for name, arr in tables.items()}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["gmax2"][36] -= 1  # the last group of the last call
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: gmax2: 1 of 37")
