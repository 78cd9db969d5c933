"""The CI gate on a seeded sample of the default set spanning every family (see gate.py):
numba problems through the grader, references and baselines passing on numba-cuda's simulator
and every mutant rejected; cuda_cpp problems compiled (the first of each family through the
grader's validate, with its static and toolchain checks, the rest with nvcc directly) and
their NOP rejected."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cudaenv.families import default_set, sample
from cudaenv.problems.model import Problem
from tests.families.gate import gate

SAMPLE_SIZE = 60
SAMPLE_SEED = 18


@functools.cache
def ci_sample() -> tuple[Problem, ...]:
    return tuple(sample(default_set(), SAMPLE_SIZE, seed=SAMPLE_SEED))


def _first_of_family(index: int) -> bool:
    problems = ci_sample()
    fam = problems[index].metadata.family
    return all(p.metadata.family != fam for p in problems[:index])


def test_the_sample_spans_every_family() -> None:
    problems = ci_sample()
    assert len(problems) == SAMPLE_SIZE
    assert {p.metadata.family for p in problems} == {p.metadata.family for p in default_set()}


@pytest.mark.parametrize("index", range(SAMPLE_SIZE))
def test_sample_problem_passes_the_gate(index: int, tmp_path: Path) -> None:
    pytest.importorskip("numba")
    problem = ci_sample()[index]
    gate(problem, tmp_path, grader=_first_of_family(index))
