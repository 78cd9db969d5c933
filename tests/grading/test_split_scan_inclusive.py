"""scan-inclusive's checker without a GPU: its cases, answered by an independent NumPy scan,
pass ``verify``; every kind of wrong output fails it, naming the case and the array (a wrong
prefix, a write past the end, a modified input, a missing or mis-typed or mis-shaped output,
the runner's own error), and every timed call of the benchmark is checked. The runner runs on
the CPU emulator in test_split_emulated.py."""

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
)
from tests.grading.split_harness import write_outputs

PROBLEM = load_suite("builtin")["scan-inclusive"]
SMALL = ["empty", "single", "random-33", "random-2049", "large-values", "misaligned"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(PROBLEM, tmp_path_factory.mktemp("scan"))


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The scan with Python ints' running sum folded by NumPy's add.accumulate in int64."""
    x = case["in"]
    out = np.add.accumulate(x.astype(np.int64)).astype(np.int32) if x.size else x.copy()
    return {"out": guarded(out, int(case["guard"])), "in_after": x.copy()}


def _outputs(run: Inputs, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(c) for n, c in run.cases.items() if only is None or n in only}


def test_the_cases_cover_the_edges_and_are_fresh_per_seed(run: Inputs, tmp_path: Path) -> None:
    sizes = {c["in"].size for c in run.cases.values()}
    assert {0, 1, 2047, 2048, 2049, 65537, (1 << 26) + 5} <= sizes
    assert int(run.cases["misaligned"]["in_offset"]) == 1
    assert int(run.cases["misaligned"]["out_offset"]) == 3
    peak = max(
        np.abs(np.cumsum(c["in"], dtype=np.int64)).max(initial=0) for c in run.cases.values()
    )
    assert peak < 2**31  # no prefix overflows, as the prompt promises
    other = another_draw(PROBLEM, tmp_path)
    assert not np.array_equal(other["random-2049"]["in"], run.cases["random-2049"]["in"])


@pytest.mark.slow  # the 2^26-element case: about 700 MB of outputs
def test_an_independent_answer_passes_every_case(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run), tmp_path)
    assert report == {"passed": True, "cases": len(run.cases), "failures": []}


def test_an_independent_answer_passes(run: Inputs, tmp_path: Path) -> None:
    report = run.decide(_outputs(run, SMALL), tmp_path)
    assert report == {"passed": True, "cases": len(SMALL), "failures": []}


def _wrong_value(out: dict) -> None:
    out["random-2049"]["out"][2048] += 1  # the first element of the second tile


def _guard(out: dict) -> None:
    out["misaligned"]["out"][1000003] = 0  # the first element past the end


def _input_modified(out: dict) -> None:
    out["large-values"]["in_after"][7] = 0


def _missing(out: dict) -> None:
    del out["single"]["in_after"]


def _dtype(out: dict) -> None:
    out["random-33"]["out"] = out["random-33"]["out"].astype(np.int64)


def _shape(out: dict) -> None:
    out["random-33"]["out"] = out["random-33"]["out"][:-1]


def _exclusive(out: dict) -> None:  # an exclusive scan (off by one place) instead
    o = out["random-2049"]["out"]
    o[1:2049] = o[:2048].copy()
    o[0] = 0


MUTATIONS = {
    "wrong value": (
        _wrong_value,
        "random-2049: out: 1 of 2049 elements wrong; first at index 2048",
    ),
    "guard overwritten": (_guard, "misaligned: out past the end: 1 of 64 elements wrong"),
    "input modified": (_input_modified, "large-values: in (modified by the call): 1 of 5003"),
    "missing output": (_missing, "single: in_after.npy is missing"),
    "wrong dtype": (_dtype, "random-33: out: dtype <i8, expected <i4"),
    "wrong shape": (_shape, "random-33: out: shape (96,), expected (97,)"),
    "exclusive scan": (_exclusive, "random-2049: out: "),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Inputs, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    out = _outputs(run, SMALL)
    mutate(out)
    failures = run.failures(out, tmp_path)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_the_runners_error_fails_the_case(run: Inputs, tmp_path: Path) -> None:
    out = _outputs(run, ["empty", "single"])
    root = write_outputs(tmp_path / "out", out)
    (root / "single" / "error.txt").write_text(
        "inclusive_scan: CUDA error an illegal memory access\n"
    )
    report = run.verify(root, run.subset(["empty", "single"]))
    assert report["failures"] == [
        "single: the runner reported an error: inclusive_scan: CUDA error an illegal memory access"
    ]


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The checker's own perf case at a small size: every timed output passes, one wrong
    element in the last call's output fails it."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 3000, 5))
    case = perf.case
    x, g = case["in"], int(case["guard"])
    outs = {}
    for r, (n, off) in enumerate(zip(case["n"].tolist(), case["in_offset"].tolist(), strict=True)):
        outs[f"out{r}"] = guarded(np.cumsum(x[off : off + n]).astype(np.int32), g)
    ok = perf.decide(outs, "ok")
    assert ok["passed"], ok
    outs["out4"][int(case["n"][4]) - 1] += 1
    bad = perf.decide(outs, "bad")
    assert bad["passed"] is False and bad["failures"][0].startswith("perf: out4: 1 of"), bad
