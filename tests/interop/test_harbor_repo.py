"""Repository tasks in SWE-kokkos-bench's Harbor layout: export (the repository once, a short
instruction), import (a local clone; else the task's Dockerfile), and real Harbor runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cudaenv.grading.grader import grade
from cudaenv.interop.harbor_docker import harbor_env, harbor_run_command, trial_results
from cudaenv.interop.harbor_export import export_problem
from cudaenv.interop.harbor_repo import BASE_COPY
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem
from tests.grading.repo_fixtures import cmake_repo, write_rows

REPO_IMAGE = os.environ.get("CUDAENV_REPO_CPU_IMAGE", "cudaenv-repo-cpu:latest")


@pytest.fixture
def problem(tmp_path: Path) -> Problem:
    _, rows = cmake_repo(tmp_path)
    return load_suite(write_rows(tmp_path / "tasks.jsonl", *rows))["demo__calc-1"]


def test_export_writes_the_repository_once_and_a_short_instruction(
    tmp_path: Path, problem: Problem
) -> None:
    task = export_problem(problem, tmp_path / "tasks", image=REPO_IMAGE)
    files = sorted(p.relative_to(task).as_posix() for p in task.rglob("*") if p.is_file())
    assert files == [
        "environment/.dockerignore",
        "environment/Dockerfile",
        "environment/checkout.tar",
        "instruction.md",
        "metadata.json",
        "solution/gold.patch",
        "solution/solve.sh",
        "task.toml",
        "tests/problem/problem-spec.yaml",
        "tests/test.patch",
        "tests/test.sh",
    ]  # the repository is in checkout.tar alone, nowhere as files
    instruction = (task / "instruction.md").read_text()
    assert len(instruction) < 3000 and "src/calc.cpp" not in instruction
    docker = (task / "environment" / "Dockerfile").read_text()
    assert "FROM ${CUDAENV_IMAGE}" in docker and REPO_IMAGE in docker
    assert "(cmake -S . -B build -G Ninja) && (cmake --build build)" in docker  # pre-warmed
    meta = json.loads((task / "metadata.json").read_text())
    spec = problem.repository
    assert spec is not None and meta["base_commit"] == spec.base_commit
    assert meta["FAIL_TO_PASS"] == ["calc.add", "calc.add_zero"]
    assert (task / "tests" / "test.patch").read_text() == spec.test_patch
    verifier = (task / "tests" / "problem" / "problem-spec.yaml").read_text()
    assert BASE_COPY in verifier and "a + b" not in verifier  # the gold stays in solution/


def test_import_with_a_local_clone(
    tmp_path: Path, problem: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = export_problem(problem, tmp_path / "tasks", image=REPO_IMAGE)
    repos = tmp_path / "repos" / "demo"
    repos.mkdir(parents=True)
    assert problem.repository is not None
    (repos / "calc").symlink_to(problem.repository.source)
    monkeypatch.setenv("CUDAENV_REPOS_DIR", str(tmp_path / "repos"))
    back = load_suite(task.parent)[0]
    spec = back.repository
    assert back.problem_type == "repository" and spec is not None
    assert spec.base_commit == problem.repository.base_commit
    assert [c.command for c in spec.f2p] == [c.command for c in problem.repository.f2p]
    assert back.solution is not None and grade(back, back.solution).passed is True


def _harbor_ready(harbor_python: str) -> str | None:
    if subprocess.run(["docker", "image", "inspect", REPO_IMAGE], capture_output=True).returncode:
        return f"image {REPO_IMAGE} missing: docker build -f docker/Dockerfile.repo-cpu ..."
    return None


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize(("agent", "expected"), [("oracle", 1.0), ("nop", 0.0)])
def test_harbor_runs_the_exported_repository_task(
    harbor_python: str, tmp_path: Path, problem: Problem, agent: str, expected: float
) -> None:
    """Harbor builds the image (checkout, pre-warmed build), runs its agent, and the separate
    verifier grades the workspace's diff: the release gate, oracle 1 and nop 0."""
    if why := _harbor_ready(harbor_python):
        pytest.skip(why)
    task = export_problem(problem, tmp_path / "tasks", image=REPO_IMAGE)
    harbor = Path(harbor_python).parent / "harbor"
    cmd = harbor_run_command(harbor, task, tmp_path / "jobs", agent, agent=agent, cpus=2)
    cmd += ["--override-memory-mb", "4096"]
    res = subprocess.run(cmd, env=harbor_env(), capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [trial] = trial_results(tmp_path / "jobs" / agent)
    assert trial["exception_info"] is None, trial["exception_info"]
    assert trial["verifier_result"]["rewards"]["reward"] == expected, trial["verifier_result"]
