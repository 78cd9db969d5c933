"""A repository task's episode: the workspace is a squashed git checkout with a pre-built
tree, the instruction is short, and the solution is the checkout's diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.env.core import CudaEnv
from cudaenv.grading.grader import grade
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem
from cudaenv.rollout.repo_gate import NAMES, transitions
from tests.grading.repo_fixtures import FIXED, cmake_repo, write_rows


@pytest.fixture
def problem(tmp_path: Path) -> Problem:
    _, rows = cmake_repo(tmp_path)
    return load_suite(write_rows(tmp_path / "tasks.jsonl", *rows))["demo__calc-1"]


def _bash(env: CudaEnv, command: str) -> str:
    obs, *_ = env.step({"tool": "bash", "args": {"command": command}})
    return obs


def test_the_workspace_is_a_checkout_with_a_prebuilt_tree(problem: Problem) -> None:
    env = CudaEnv(problem)
    try:
        text, _ = env.reset(seed=0)
        assert "git checkout of demo/calc" in text and "Files in the workspace" not in text
        assert len(text) < 4000  # an instruction, not a listing of the repository
        assert "1\n" in _bash(env, "git log --oneline | wc -l")  # one squashed commit
        assert "CLEAN" in _bash(env, 'test -z "$(git status --porcelain)" && echo CLEAN')
        assert "EXEC\nLINK" in _bash(
            env, "test -x tools/gen.sh && echo EXEC; test -L src/calc.h && echo LINK"
        )
        assert "ABSENT" in _bash(env, "test -e tests/test_add.cpp || echo ABSENT")  # held out
        # the pre-built tree: the first build has nothing to do
        assert "no work to do" in _bash(env, "cmake --build build")
    finally:
        env.close()


def test_the_solution_is_the_checkouts_diff(problem: Problem) -> None:
    env = CudaEnv(problem)
    try:
        env.reset(seed=0)
        env.step({"tool": "write_file", "args": {"path": "src/calc.cpp", "content": FIXED}})
        _bash(env, "rm tools/gen.sh && chmod +x src/calc.hpp && ln -s calc.cpp src/link.cpp")
        _bash(
            env,
            "mkdir -p notes scratch && echo hi > notes/todo.txt && echo x > scratch/ignored.txt",
        )
        _bash(
            env, "cmake -S . -B mybuild -G Ninja > /dev/null && cmake --build mybuild > /dev/null"
        )
        sol = env.workspace_solution()
    finally:
        env.close()
    patch = sol.patch or ""  # type: ignore[union-attr]
    assert "a + b" in patch and "deleted file mode 100755" in patch and "tools/gen.sh" in patch
    assert "old mode 100644\nnew mode 100755" in patch  # chmod +x src/calc.hpp
    assert "new file mode 120000" in patch and "notes/todo.txt" in patch
    assert "mybuild" not in patch and "scratch/" not in patch  # a build tree, an ignored file
    assert grade(problem, sol).passed is True


def test_the_six_transitions(problem: Problem) -> None:
    """The release gate, the oracle's and the NOP's episodes included."""
    steps = {t.name: t for t in transitions(problem)}
    assert list(steps) == list(NAMES)
    assert all(t.ok for t in steps.values()), [t.detail for t in steps.values() if not t.ok]
    assert steps["oracle"].detail.startswith("reward 1.0") and steps["nop"].detail.startswith(
        "reward 0.0"
    )
    spec = problem.repository
    assert spec is not None
    wrong = problem.model_copy(
        update={"repository": spec.model_copy(update={"failure_stage": "compile"})}
    )
    (bad,) = transitions(wrong, only=("test_patch_fails",))
    assert not bad.ok and "fails at runtime (expected compile)" in bad.detail
