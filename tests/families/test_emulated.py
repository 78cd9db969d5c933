"""cuda_cpp problems run on the CPU (tests/families/cuemu) the way the grader runs a split
harness: the checker draws the inputs, the runner built with the solution writes the outputs,
the checker decides. The reference and the baseline pass, every deterministic mutant fails. A
compile-only machine cannot run the kernels; the emulator runs them with real barriers,
shuffles and atomics, so runner, checker, reference and mutants are checked end to end here
(the GPU check repeats it on a GPU)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cudaenv.families import family_names, generate, get_family
from cudaenv.families.base import build_problem
from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate
from tests.families.gate import check_emulated

pytestmark = pytest.mark.skipif(bool(emulate.available()), reason=str(emulate.available()))
CPP_FAMILIES = [n for n in family_names() if get_family(n).problem_type == "cuda_cpp"]
PER_FAMILY = 2


@functools.cache
def picked(family: str) -> tuple[Problem, ...]:
    """A seeded draw of the family's problems (the same ones on every run)."""
    return tuple(generate([family], count=PER_FAMILY, seed=31))


@pytest.mark.parametrize("family", CPP_FAMILIES)
@pytest.mark.parametrize("k", range(PER_FAMILY))
def test_reference_and_baseline_pass_and_mutants_fail_emulated(
    family: str, k: int, tmp_path: Path
) -> None:
    problem = picked(family)[k]
    check_emulated(problem, tmp_path)


@pytest.mark.parametrize(
    ("family", "params", "small"),
    [
        ("reduce-axis", {"axis": "row", "op": "argmax", "dtype": "f32", "pitched": True},
         {"rows = 8192": "rows = 37", "cols = 2048": "cols = 70"}),
        ("indexing", {"op": "scatter_add", "dtype": "f64", "width": 4, "weighted": False,
                      "policy": "none", "dist": "hot"},
         {"n = 1048576": "n = 300", "rows = 4096": "rows = 9"}),
    ],
)  # fmt: skip
def test_the_benchmark_runs_every_timed_call_on_its_inputs(
    family: str, params: dict, small: dict[str, str], tmp_path: Path
) -> None:
    """The C++ runner's benchmark (warm-up, outputs poisoned again, the timed calls, every
    output back), shrunk by editing the sizes in the checker's perf_cases: the shifted windows
    of one input (reduce-axis) and per-call in-out outputs (a scatter-add adds to its own
    initial values, restored after the warm-up) pass; one round's outputs fail another's."""
    problem = build_problem(get_family(family), params)
    files = {f.path: f.content for f in problem.check_files}
    text = files["check/check.py"]
    for old, new in small.items():
        assert old in text, old
        text = text.replace(old, new)
    problem = problem.model_copy(
        update={"check_files": [f.model_copy(update={"content": text}) if f.path == "check/check.py"
                                else f for f in problem.check_files]}
    )  # fmt: skip
    sources = {f.path: f.content for f in problem.context_files + problem.test_files}
    sources |= {f.path: f.content for f in problem.solution.files}  # type: ignore[union-attr]
    binary = emulate.build(sources, tmp_path / "ref", sources=["solution.cu", "test/runner.cpp"])
    checked = emulate.Checked(problem, tmp_path / "check")
    run = checked.run(binary, stage="perf", seed=11)
    assert run.passed, (run.output[-1500:], run.report)
    other = checked.checker.gen("perf", 12)
    out = binary.parent / emulate.IO / "out"
    assert not checked.checker.verify("perf", 12, other, out)["passed"]
