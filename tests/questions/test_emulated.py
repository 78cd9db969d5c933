"""The C++ questions on the CPU, through the CUDA emulator of ``tests/families/cuemu``: the
question's kernel (a reference and a mutant) with the driver the GPU check uses must print the
stored answer; the racecheck driver of a race item builds and runs. Not a GPU (the C++ mutant
questions stay unverified until ``scripts/questions_gpu.py`` has run on one), but a run of the
very kernels and drivers a model is asked about. ``bench/questions_check.py --cpp N`` runs
many more."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cudaenv.questions import driver
from cudaenv.questions.generate import generate_questions
from tests.families.cuemu import emulate
from tests.questions.emulated import run_emulated, source_of

pytestmark = pytest.mark.skipif(bool(emulate.available()), reason=str(emulate.available()))
ROOT = Path(__file__).resolve().parents[2]
CPP = ["scan", "stencil", "matmul", "indexing", "reduce-axis", "elementwise", "permute"]


def test_cpp_exec_output_answers_are_what_the_emulated_kernels_write(tmp_path: Path) -> None:
    qs = generate_questions(count=10, seed=41, kinds=["exec-output"], families=CPP, unverified=True)
    picked = [
        next(q for q in qs if q.variant == "reference"),
        next(q for q in qs if q.variant != "reference"),
    ]
    for i, q in enumerate(picked):
        got = run_emulated(q, tmp_path / str(i))
        assert got.tolist() == np.array(q.expected, dtype=float).reshape(-1).tolist(), (
            q.task_id,
            q.variant,
        )


def test_the_racecheck_driver_of_a_race_item_runs(tmp_path: Path) -> None:
    q = generate_questions(
        count=1, seed=41, kinds=["race"], families=["stencil", "scan"], unverified=True
    )[0]
    r, source, headers = source_of(q)  # the reference, or the mutant without a barrier
    header = next(p for p in headers if p.endswith(".h")).split("/", 1)[-1]
    main = driver.main_source(r, driver.race_case(r), header, print_output=False, synthetic=True)
    binary = emulate.build(
        {**headers, "solution.cu": source, "main.cu": main},
        tmp_path,
        sources=["solution.cu", "main.cu"],
    )
    run = emulate.run(binary)
    assert run.rc == 0 and "ERROR" not in run.output, run.output[-1000:]


def test_the_gpu_check_says_it_needs_a_gpu(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "scripts/questions_gpu.py", "--out", str(tmp_path)], cwd=ROOT,
                         env={"CUDAENV_FORCE_NO_GPU": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 2 and "needs a GPU" in res.stderr
