"""The cccl and cuBLAS split runners build for real: each problem's build command (nvcc against
CCCL, and the cuBLAS wheel for ``-lcublas``), run by the grader in a local sandbox, with the
reference and with the baseline. Without a GPU the grading stops there ("compiled; GPU stages
skipped"); on one, the same gradings run the runner and the checker, and must pass."""

from __future__ import annotations

import pytest

import cudaenv
from cudaenv.problems import load_suite
from cudaenv.toolkit import has_gpu

SUITE = load_suite("builtin")
PROBLEMS = sorted(p.task_id for p in SUITE if p.group in ("cccl", "cublas"))


def test_every_cccl_and_cublas_problem_is_split() -> None:
    assert len(PROBLEMS) == 10
    for task_id in PROBLEMS:
        p = SUITE[task_id]
        shared = ["test/cudaenv_cublas.h"] if p.group == "cublas" else []
        assert p.split and [f.path for f in p.test_files] == [
            *shared,
            "test/cudaenv_runner.h",
            "test/runner.cpp",
        ]
        assert not any("COMPLETION_TOKEN" in f.content for f in p.test_files)
        assert not any("CUDAENV_BENCH_SEED" in f.content for f in p.test_files)


@pytest.mark.slow  # nvcc builds of Thrust, CUB and cuBLAS code
@pytest.mark.parametrize("task_id", PROBLEMS)
@pytest.mark.parametrize("which", ["reference", "baseline"])
def test_the_runner_builds_with_the_solution(task_id: str, which: str) -> None:
    problem = SUITE[task_id]
    solution = problem.solution if which == "reference" else problem.baseline_solution
    if solution is None:
        pytest.skip(f"{task_id} has no {which}")
    v = cudaenv.grade(problem, solution, test_cache=False, check_references=which == "reference")
    assert v.compiled is True, v.reason + v.stages["build"].output_tail
    if has_gpu():
        assert v.passed is True, v.reason
    else:
        assert v.passed is None and v.stages["test"].reason == "no GPU", v.reason
