"""Only gradings in fresh sandboxes write the test-outcome cache (issue 27: an outcome forged
in a sandbox an agent had used was served to a later, honest grading of the same files)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import cudaenv
from cudaenv.problems import load_suite
from cudaenv.sandbox import Sandbox
from cudaenv.sandbox.base import ExecResult
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import CPU_SOLUTION


@pytest.fixture
def problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def test_a_new_sandbox_is_fresh_until_a_command_runs() -> None:
    with LocalSandbox() as box:
        assert box.fresh
        box.write_file("a.txt", "x")  # what the holder writes leaves it fresh
        assert box.fresh
        assert box.exec("true", timeout=30).ok
        assert not box.fresh
    assert not box.fresh  # closed


def test_outcomes_are_cached_only_from_fresh_sandboxes(problem) -> None:
    files = {"solution.cpp": CPU_SOLUTION + f"// fresh probe {uuid.uuid4().hex}\n"}

    def used() -> Sandbox:
        """A factory that hands out a sandbox something already ran in."""
        box = LocalSandbox()
        result: ExecResult = box.exec("true", timeout=30)
        assert result.ok and not box.fresh
        return box

    first = cudaenv.grade(problem, files, sandbox=used)
    assert first.passed and not first.stages["test"].cached
    second = cudaenv.grade(problem, files)  # fresh: the used sandbox's outcome was not kept
    assert second.passed and not second.stages["test"].cached
    third = cudaenv.grade(problem, files)  # the fresh grading's outcome was kept
    assert third.passed and third.stages["test"].cached
