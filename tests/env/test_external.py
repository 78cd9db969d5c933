"""The boundary for episodes driven from outside (``env.instruction``, ``record_step``,
``record_usage``, ``submit``): a driver with its own tools works on ``env.sandbox`` directly
and the env keeps the record and grades, on the real local sandbox and grader."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import cudaenv
from cudaenv.env.external import ExternalStep, Instruction
from cudaenv.env.info import TERMINAL_KEYS
from cudaenv.errors import CudaEnvError
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def test_instruction_is_the_reset_text_as_data(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    with pytest.raises(CudaEnvError, match="reset"):
        env.instruction  # noqa: B018
    try:
        text, info = env.reset()
        ins = env.instruction
        assert isinstance(ins, Instruction)
        assert ins.text == text == env.messages[1]["content"]
        assert (ins.task_id, ins.mode) == ("cpu-add", "solve") and ins.tools == info["tools"]
        assert text.startswith(ins.task) and "Tools:" not in ins.task
        assert "\nTools:\n" in text[len(ins.task) :] and "write_file" not in ins.task
        paths = [f.path for f in ins.files]
        assert paths == sorted(f.path for f in cpu_problem.context_files)
        assert all(env.sandbox.read_file(f.path).decode() == f.content for f in ins.files)
    finally:
        env.close()


def test_recorded_steps_then_submit_grade_like_step(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, max_tokens=10_000)
    env.reset()
    env.sandbox.write_file("solution.cpp", CPU_SOLUTION)  # the driver's own tool
    write = env.record_step(
        ExternalStep(
            tool="Write",
            args={"file_path": "solution.cpp", "content": CPU_SOLUTION},
            observation="File created",
            usage={"input_tokens": 10, "output_tokens": 3},
        )
    )
    text = env.record_step({"tool": None, "args": {"text": "Done."}, "tokens": 0})
    env.record_usage({"input_tokens": 5, "turns": 2}, cost_usd=0.25)
    assert (write.index, text.index) == (0, 1) and write.call_id == "ext_0"
    assert write.tokens > 0 and text.tokens == 0 and text.call_id is None
    obs, reward, terminated, truncated, info = env.submit()
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert obs == "submitted for grading"
    assert set(TERMINAL_KEYS) <= set(info) and info["is_success"] and info["verdict"].passed
    assert info["truncation_reason"] is None and info["tool"] == "submit"
    traj = info["trajectory"]
    assert traj is env.trajectory and traj.terminated and not traj.truncated
    assert [s.tool for s in traj.steps] == ["Write", None, "submit"]
    assert traj.steps[-1].reward == 1.0 and traj.reward == 1.0
    assert traj.usage == {"input_tokens": 15, "output_tokens": 3, "turns": 2}
    assert traj.cost_usd == 0.25 and traj.observation_tokens >= write.tokens
    messages = env.messages[2:]
    call = messages[0]["tool_calls"][0]
    assert call["id"] == "ext_0" and call["function"]["name"] == "Write"
    assert json.loads(call["function"]["arguments"])["content"] == CPU_SOLUTION
    assert messages[1] == {"role": "tool", "tool_call_id": "ext_0", "content": "File created"}
    assert messages[2] == {"role": "assistant", "content": "Done."}
    assert messages[3]["tool_calls"][0]["function"]["name"] == "submit"
    for late in (lambda: env.record_step({"tool": "Bash"}), env.submit, lambda: env.step("x")):
        with pytest.raises(CudaEnvError, match="over"):
            late()


def test_submit_with_a_reason_grades_and_ends_truncated(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, grade_on_truncation=False)
    env.reset()
    env.sandbox.write_file("solution.cpp", CPU_SOLUTION)
    _, reward, terminated, truncated, info = asyncio.run(env.asubmit("time_limit"))
    assert (reward, terminated, truncated) == (1.0, False, True)
    assert info["truncation_reason"] == "time_limit" and info["verdict"].passed
    traj = env.trajectory
    assert traj.truncated and not traj.terminated and traj.truncation_reason == "time_limit"
    env.reset()
    with pytest.raises(CudaEnvError, match="non-empty"):
        env.submit("")
    env.close()


def test_nothing_is_recorded_outside_an_episode(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    with pytest.raises(CudaEnvError, match="reset"):
        env.record_step({"tool": "Bash"})
    env.reset()
    env.close()  # an episode closed before its end records nothing more
    with pytest.raises(CudaEnvError, match="over"):
        env.record_usage({"turns": 1})
    assert env.trajectory is not None and env.trajectory.steps == []
