"""``CudaEnv(grader=...)``: the public grading seam (the cluster's workers route through it).

The graders here are real: they grade with the default grader and add a policy of their own,
so the reward seen proves whose verdict the env used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.env.core import CudaEnv
from cudaenv.grading.request import GradeRequest, grade_here
from cudaenv.grading.verdict import Verdict
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


class NoCommentsGrader:
    """Grades as usual, then fails a solution holding a ``//`` comment; records each call."""

    def __init__(self) -> None:
        self.requests: list[GradeRequest] = []
        self.defaults: list[Verdict] = []

    def __call__(self, request: GradeRequest) -> Verdict:
        self.requests.append(request)
        verdict = grade_here(request)
        self.defaults.append(verdict.model_copy(deep=True))
        if any("//" in f.content for f in request.files):
            verdict.passed, verdict.failure, verdict.reason = False, "agent", "comments banned"
        return verdict


def _episode(env: CudaEnv, content: str) -> tuple[float, dict]:
    env.reset(seed=0)
    env.step({"tool": "write_file", "args": {"path": "solution.cpp", "content": content}})
    _, reward, terminated, _, info = env.step({"tool": "submit", "args": {}})
    assert terminated
    return reward, info


def test_the_graders_verdict_is_the_reward(cpu_problem) -> None:
    grader = NoCommentsGrader()
    env = CudaEnv(cpu_problem, grader=grader, grade_options={"rounds": 1})
    try:
        reward, info = _episode(env, CPU_SOLUTION)
        assert reward == 1.0 and info["is_success"] is True
        commented = CPU_SOLUTION + "// a comment\n"
        reward, info = _episode(env, commented)
    finally:
        env.close()
    assert reward == 0.0 and info["is_success"] is False and info["reason"] == "comments banned"
    assert info["verdict"] is env.trajectory.verdict and info["verdict"].passed is False
    assert grader.defaults[1].passed is True  # the default grader alone would have passed it
    first, second = grader.requests
    assert [f.content for f in second.files if f.path == "solution.cpp"] == [commented]
    assert first.problem is cpu_problem and first.mode == "solve"
    assert first.options == {"rounds": 1} and first.sandbox == "local"


def test_the_default_grader_grades_here(cpu_problem) -> None:
    env = CudaEnv(cpu_problem)
    assert env.grader is grade_here
    try:
        reward, info = _episode(env, CPU_SOLUTION + "// fine by default\n")
    finally:
        env.close()
    assert reward == 1.0 and info["verdict"].stages["test"].status == "ok"


def test_a_grader_that_raises_is_masked_not_scored(cpu_problem) -> None:
    def broken(request: GradeRequest) -> Verdict:
        raise ConnectionError("grading service unreachable")

    env = CudaEnv(cpu_problem, grader=broken)
    try:
        reward, info = _episode(env, CPU_SOLUTION)
    finally:
        env.close()
    assert reward == 0.0 and info["reward_valid"] is False
    assert info["failure"] == "infrastructure"
    assert info["reason"] == "grading raised ConnectionError: grading service unreachable"
