"""conv1d-constant's checker without a GPU: its cases are the old harness's (radii 0 to 32 by
sizes 0 to 100003, three large signals, a filter replaced twice on one input), drawn fresh
per seed; convolutions computed independently (float32 accumulation, as a kernel would) pass;
a filter not replaced, wrap-around instead of zero padding, an integer result off by one ulp,
an error beyond the tolerance, a write past the end, a missing or mistyped output fail, naming
case and array. The runner runs on the CPU emulator in test_split_kernels_emulated.py."""

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

PROBLEM = load_suite("builtin")["conv1d-constant"]
SMALL = ["r2-n65", "r5-n4097", "r16-n7", "r1-n65-int", "r0-n0-int", "filter-replaced"]


def _conv(x: np.ndarray, w: np.ndarray, *, wrap: bool = False) -> np.ndarray:
    """out[i] = sum_k w[k + r] * x[i + k], accumulated in float32 tap by tap, zero outside
    [0, n) (or, wrongly, wrapped around)."""
    n, r = len(x), (len(w) - 1) // 2
    acc = np.zeros(n, np.float32)
    for k in range(-r, r + 1):
        idx = np.arange(n) + k
        inside = (idx >= 0) & (idx < n)
        tap = x[idx % max(n, 1)] if n else x
        acc += w[k + r] * (tap if wrap else np.where(inside, tap, np.float32(0)))
    return acc


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    pad = int(case["guard"])
    return {f"out{k}": guarded(_conv(case["x"], w), pad) for k, w in enumerate(case["weights"])}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("conv1d"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    assert len(inputs) == 7 * 10 + 3 + 1
    for c in inputs.values():
        r = int(c["radius"])
        assert c["weights"].shape[1] == 2 * r + 1 and 0 <= r <= 32
        if bool(c["exact"]):  # small integers: every partial sum exact in float
            assert np.all(np.abs(c["x"]) <= 4) and np.all(c["x"] == np.round(c["x"]))
    assert {(len(c["x"]), int(c["radius"])) for c in inputs.values()} >= {
        ((1 << 22) + 13, 32),
        ((1 << 22) + 5, 7),
        (3000000, 16),
        (1, 32),
    }
    replaced = inputs["filter-replaced"]["weights"]
    assert replaced.shape == (3, 9) and len({w.tobytes() for w in replaced}) == 3
    again, other = split.redrawn()
    assert np.array_equal(again["r5-n4097"]["x"], inputs["r5-n4097"]["x"])
    assert not np.array_equal(other["r5-n4097"]["weights"], inputs["r5-n4097"]["weights"])


def test_independent_convolutions_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 74, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _filter_kept(out: dict, inputs: dict) -> None:
    """The second filter never reached the device: the first one's result again."""
    out["filter-replaced"]["out1"] = out["filter-replaced"]["out0"].copy()


def _wrapped(out: dict, inputs: dict) -> None:
    c = inputs["r16-n7"]
    out["r16-n7"]["out0"] = guarded(_conv(c["x"], c["weights"][0], wrap=True), 64)


def _one_ulp(out: dict, inputs: dict) -> None:
    got = out["r1-n65-int"]["out0"]
    got[3] = np.nextafter(got[3], np.float32(np.inf))


def _beyond_tolerance(out: dict, inputs: dict) -> None:
    out["r5-n4097"]["out0"][500] += np.float32(1e-3)


MUTATIONS = {
    "filter not replaced": (_filter_kept, "filter-replaced: out1: "),
    "wrap-around": (_wrapped, "r16-n7: out0: "),
    "integers off by an ulp": (
        _one_ulp,
        "r1-n65-int: out0: 1 of 65 elements wrong; first at index 3",
    ),
    "beyond the tolerance": (
        _beyond_tolerance,
        "r5-n4097: out0: 1 of 4097 elements wrong; first at index 500",
    ),
    "guard overwritten": (
        lambda out, _: out["r0-n0-int"]["out0"].__setitem__(0, 0.0),
        "r0-n0-int: out0 past the end: 1 of 64 elements wrong",
    ),
    "not written": (
        lambda out, _: out["r2-n65"]["out0"].__setitem__(6, np.nan),
        "r2-n65: out0: 1 of 65 elements wrong; first at index 6: got nan",
    ),
    "missing": (
        lambda out, _: out["filter-replaced"].pop("out2"),
        "filter-replaced: out2.npy is missing",
    ),
    "wrong shape": (
        lambda out, _: out["r2-n65"].__setitem__("out0", out["r2-n65"]["out0"][:65]),
        "r2-n65: out0: shape (65,), expected (129,)",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed calls, each its own output (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 5003, 16, 3))
    want = guarded(_conv(perf.inputs["x"], perf.inputs["weights"][0]), int(perf.inputs["guard"]))
    outs = {f"out{t}": want.copy() for t in range(3)}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["out2"][5002] += np.float32(0.01)  # the last output of the last call
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out2: 1 of")
