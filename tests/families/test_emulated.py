"""cuda_cpp problems run on the CPU (tests/families/cuemu): the reference and the baseline pass
their own harness, and every deterministic mutant fails it. A compile-only machine cannot run
the kernels; the emulator runs them with real barriers, shuffles and atomics, so the harness,
the reference and the mutants are checked end to end here (the GPU check repeats it on a GPU)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cudaenv.families import family_names, generate, get_family
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
