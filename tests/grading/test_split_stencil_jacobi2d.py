"""stencil-jacobi2d's checker without a GPU: its chains, answered by an independent float32
NumPy stencil, pass ``verify``; every kind of wrong output fails it, naming the case and the
array (an interior cell off by more than 1e-5, a boundary cell off by one ulp, a NaN left in a
cell never written, a wrong first step, a write past either buffer, a missing output, a wrong
shape), and the benchmark's last two timed steps are checked. The runner runs on the CPU
emulator in test_split_emulated.py."""

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
    poisoned,
)

PROBLEM = load_suite("builtin")["stencil-jacobi2d"]
SMALL = ["0x0-steps1", "5x0-steps1", "1x7-steps2", "3x3-steps3", "17x33-steps5", "257x129-steps20"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("jacobi"))


def _step(g: np.ndarray) -> np.ndarray:
    """One step: boundary copied (a mask), interior the neighbours' mean, in float32."""
    ny, nx = g.shape
    if ny < 3 or nx < 3:
        return g.copy()
    p = np.pad(g, 1)
    mean = np.float32(0.25) * ((p[:-2, 1:-1] + p[2:, 1:-1]) + (p[1:-1, :-2] + p[1:-1, 2:]))
    interior = np.zeros(g.shape, dtype=bool)
    interior[1:-1, 1:-1] = True
    return np.where(interior, mean, g).astype(np.float32)


def _chain(g: np.ndarray, steps: int) -> list[np.ndarray]:
    states = [g]
    for _ in range(steps):
        states.append(_step(states[-1]))
    return states


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    states, pad = _chain(case["grid"], int(case["steps"])), int(case["guard"])
    return {
        "first": states[1].reshape(-1),
        "final": guarded(states[-1], pad),
        "other_guard": poisoned(np.float32, pad),
    }


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(c) for n, c in run.cases.items() if only is None or n in only}


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    shapes = {(c["grid"].shape[1], c["grid"].shape[0], int(c["steps"])) for c in run.cases.values()}
    assert {(0, 0, 1), (0, 5, 1), (1, 1, 2), (3, 3, 3), (257, 129, 20), (4099, 2051, 4)} <= shapes
    g = run.cases["17x33-steps5"]["grid"]
    assert np.all(g[0] == 1.0) and np.all(g[1:, -1] >= 0.5) and g.min() >= 0.0 and g.max() <= 1.0
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["17x33-steps5"]["grid"], g)


def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def _interior(out: dict, run: Inputs) -> None:
    out["17x33-steps5"]["final"][5 * 17 + 5] += 2e-5


def _interior_close(out: dict, run: Inputs) -> None:  # within 1e-5 passes; the guard then fails
    out["17x33-steps5"]["final"][5 * 17 + 5] += 5e-6
    out["17x33-steps5"]["final"][17 * 33] = 0.0


def _boundary_ulp(out: dict, run: Inputs) -> None:
    f = out["257x129-steps20"]["final"]
    f[256] = np.nextafter(f[256], np.float32(0.0))  # the last cell of the hot row


def _nan(out: dict, run: Inputs) -> None:
    out["3x3-steps3"]["final"][4] = np.nan


def _first(out: dict, run: Inputs) -> None:  # right after all steps, but the first step wrong
    out["257x129-steps20"]["first"][300] += 0.01


def _other_guard(out: dict, run: Inputs) -> None:
    out["1x7-steps2"]["other_guard"][0] = 0.0


def _missing(out: dict, run: Inputs) -> None:
    del out["5x0-steps1"]["other_guard"]


def _shape(out: dict, run: Inputs) -> None:
    out["3x3-steps3"]["first"] = out["3x3-steps3"]["first"][:-1]


MUTATIONS = {
    "interior off": (
        _interior,
        "17x33-steps5: final: 1 of 561 elements wrong; first at index (5, 5)",
    ),
    "interior near, guard written": (_interior_close, "17x33-steps5: final past the end: 1 of 64"),
    "boundary one ulp": (
        _boundary_ulp,
        "257x129-steps20: final: 1 of 33153 elements wrong; first at index (0, 256)",
    ),
    "NaN": (_nan, "3x3-steps3: final: 1 of 9 elements wrong; first at index (1, 1): got nan"),
    "first step": (_first, "257x129-steps20: first step: 1 of 33153 elements wrong"),
    "other buffer's guard": (_other_guard, "1x7-steps2: the other buffer past the end: 1 of 64"),
    "missing output": (_missing, "5x0-steps1: other_guard.npy is missing"),
    "wrong shape": (_shape, "3x3-steps3: first: shape (8,), expected (9,)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    failures = mutant_failures(run, _outputs(run, SMALL), mutate, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_the_last_two_timed_steps_are_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: the final grid and the step before it (the
    other buffer) pass; a wrong cell in either fails."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 67, 45, 10))
    case = perf.case
    states, pad = _chain(case["grid"], 10), int(case["guard"])
    good = {
        "final": guarded(states[10], pad),
        "previous": states[9].reshape(-1),
        "other_guard": poisoned(np.float32, pad),
    }
    assert perf.decide(good, "ok")["passed"]
    for name in ("final", "previous"):
        wrong = {k: v.copy() for k, v in good.items()}
        wrong[name][67 * 20 + 30] += 0.01
        report = perf.decide(wrong, name)
        assert report["passed"] is False and report["failures"][0].startswith(
            f"perf: {name}: 1 of"
        ), report
