"""layernorm-rows's checker without a GPU: its cases are the old harness's (centered and offset
rows on shapes from 50001 x 3 to 1 x 262144, constant rows, eps = 0.1), drawn fresh per seed;
rows normalised independently pass; the one-pass variance E[x^2] - E[x]^2 in float, the
unbiased variance, eps outside the root, an unwritten element, a write past the end, a
modified input, a missing or mistyped output fail, naming case and array. The runner runs on
the CPU emulator in test_split_kernels_emulated.py."""

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

PROBLEM = load_suite("builtin")["layernorm-rows"]
SMALL = ["empty-0x8", "centered-3x7", "offset-33x1000", "offset-3x7", "eps-0.1-16x300"]


def _norm(x: np.ndarray, gamma, beta, eps, *, how: str = "right") -> np.ndarray:
    """Rows normalised: numpy's mean and var in double ("right"), or a known mistake."""
    if how == "one-pass float":
        x32 = x.astype(np.float32)
        mean = x32.mean(axis=1, keepdims=True, dtype=np.float32)
        var = (x32 * x32).mean(axis=1, keepdims=True, dtype=np.float32) - mean * mean
        return ((x32 - mean) / np.sqrt(np.maximum(var, 0) + eps) * gamma + beta).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, ddof=1 if how == "unbiased" else 0, keepdims=True)
    rstd = 1.0 / np.sqrt(var) + float(eps) if how == "eps outside" else 1.0 / np.sqrt(var + eps)
    return ((x64 - mean) * rstd * gamma + beta).astype(np.float32)


def _answer(case: dict[str, np.ndarray], how: str = "right") -> dict[str, np.ndarray]:
    x, g, b = case["x"], case["gamma"], case["beta"]
    y = _norm(x, g, b, case["eps"], how=how) if x.size else np.zeros(x.shape, np.float32)
    after = {"x_after": x.copy(), "gamma_after": g.copy(), "beta_after": b.copy()}
    return {"y": guarded(y, int(case["guard"])), **after}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("layernorm"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    assert len(inputs) == 1 + 12 + 12 + 2
    assert inputs["empty-0x8"]["x"].shape == (0, 8)
    assert inputs["offset-50001x3"]["x"].shape == (50001, 3)
    assert np.abs(inputs["offset-50001x3"]["x"].mean(axis=1)).max() > 990
    assert inputs["centered-1x262144"]["x"].shape == (1, 262144)
    for name, c in inputs.items():
        if name.startswith("offset") and c["x"].shape[1] > 1:  # offsets to 1000, std >= 1
            x = c["x"].astype(np.float64)
            assert np.all(np.abs(x.mean(axis=1)) <= 1000 + 5 * 1.7) and np.all(x.var(axis=1) >= 1)
    assert float(inputs["eps-0.1-16x300"]["eps"]) == pytest.approx(0.1)
    assert np.all(inputs["constant-4x999"]["x"] == 2.0)
    again, other = split.redrawn()
    assert np.array_equal(again["offset-3x7"]["x"], inputs["offset-3x7"]["x"])
    assert not np.array_equal(other["offset-3x7"]["x"], inputs["offset-3x7"]["x"])


def test_independent_rows_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 27, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _mistake(case: str, how: str):
    def mutate(out: dict, inputs: dict) -> None:
        out[case] = _answer(inputs[case], how)

    return mutate


def _modified_input(out: dict, inputs: dict) -> None:
    out["centered-3x7"]["x_after"][1, 2] = 0.0  # the call overwrote an input in place


MUTATIONS = {
    "one-pass variance in float": (
        _mistake("offset-33x1000", "one-pass float"),
        "offset-33x1000: y: ",
    ),
    "unbiased variance": (_mistake("offset-3x7", "unbiased"), "offset-3x7: y: "),
    "eps outside the root": (_mistake("eps-0.1-16x300", "eps outside"), "eps-0.1-16x300: y: "),
    "not written": (
        lambda out, _: out["centered-3x7"]["y"].__setitem__(20, np.nan),
        "centered-3x7: y: 1 of 21 elements wrong; first at index 20: got nan",
    ),
    "guard overwritten": (
        lambda out, _: out["empty-0x8"]["y"].__setitem__(3, 1.0),
        "empty-0x8: y past the end: 1 of 64 elements wrong; first at index 3",
    ),
    "input modified": (_modified_input, "centered-3x7: x (modified by the call): 1 of 21"),
    "missing": (
        lambda out, _: out["offset-3x7"].pop("gamma_after"),
        "offset-3x7: gamma_after.npy is missing",
    ),
    "wrong dtype": (
        lambda out, _: out["centered-3x7"].__setitem__(
            "y", out["centered-3x7"]["y"].astype(np.float16)
        ),
        "centered-3x7: y: dtype <f2, expected <f4",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed calls, call r on rows r .. r + rows - 1, each its own y (the
    checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 37, 300, 3))
    p = perf.inputs
    assert p["x"].shape == (39, 300)
    ys = [_norm(p["x"][r : r + 37], p["gamma"], p["beta"], p["eps"]) for r in range(3)]
    outs = {f"y{r}": guarded(y, int(p["guard"])) for r, y in enumerate(ys)}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["y2"] = guarded(ys[0], int(p["guard"]))  # the last call normalised the first rows
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: y2: ")
