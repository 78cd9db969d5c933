"""The whole default set through the CPU gate (hours on two cores, so only when asked:
``CUDAENV_GATE_DEFAULT_SET=1 python -m pytest tests/families/test_slow_default_set.py -n N``;
CI runs the 60-problem sample in test_gate.py): numba problems through the grader (reference and baseline pass on the
simulator, NOP and every mutant rejected); cuda_cpp problems compiled with nvcc, then run on
the CPU emulation (reference and baseline pass, every deterministic mutant fails)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudaenv.families import DEFAULT_COUNT, default_set
from tests.families.cuemu import emulate
from tests.families.gate import check_emulated, gate

WHOLE_SET = os.environ.get("CUDAENV_GATE_DEFAULT_SET", "") == "1"


@pytest.mark.slow
@pytest.mark.skipif(not WHOLE_SET, reason="the whole default set: set CUDAENV_GATE_DEFAULT_SET=1")
@pytest.mark.parametrize("index", range(DEFAULT_COUNT))
def test_default_set_problem_passes_the_gate(index: int, tmp_path: Path) -> None:
    problem = default_set()[index]
    if problem.problem_type == "cuda_python":
        pytest.importorskip("numba")
        gate(problem, tmp_path, grader=True)
        return
    gate(problem, tmp_path / "nvcc", grader=False)
    if emulate.available() is None:
        check_emulated(problem, tmp_path / "cpu")
