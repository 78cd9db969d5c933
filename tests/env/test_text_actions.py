"""Text actions: Hermes <tool_call> blocks, bare JSON, tool-call lists; one reply per step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cudaenv
from cudaenv.env.actions_text import parse_reply, parse_text
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def block(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_parse_text_forms() -> None:
    text = "I will look.\n" + block("bash", command="ls") + "\nthen\n" + block("list_files")
    calls = parse_text(text)
    assert [c.call.tool for c in calls] == ["bash", "list_files"]
    assert calls[0].call.args == {"command": "ls", "timeout": 120}
    (bare,) = parse_text('Sure: {"name": "read_file", "arguments": {"path": "a.txt"}} done')
    assert bare.call.tool == "read_file" and bare.call.args == {"path": "a.txt"}
    (legacy,) = parse_text('{"tool": "bash", "args": {"command": "pwd"}}')
    assert legacy.call.tool == "bash"
    assert parse_text("no call here, just prose about {braces}") == []


def test_parse_text_malformed_blocks_name_the_problem() -> None:
    good, bad, unclosed = parse_text(
        block("list_files")
        + '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>'
        + '<tool_call>{"name": "bash"'
    )
    assert good.call is not None and bad.call is None and unclosed.call is None
    assert bad.error.startswith("tool call 2: not valid JSON") and "column" in bad.error
    assert "not closed" in unclosed.error
    (wrong,) = parse_text(block("rm_rf", path="/"))
    assert wrong.call is None and "unknown tool 'rm_rf'" in wrong.error
    (args,) = parse_text(block("bash", command="ls", colour="red"))
    assert args.call is None and "colour" in args.error


def test_parse_reply_kinds() -> None:
    assert parse_reply("hello").kind == "invalid"
    assert parse_reply(block("submit")).kind == "text"
    reply = parse_reply([{"tool": "list_files"}, {"tool": "submit"}])
    assert reply.kind == "calls" and [c.call.tool for c in reply.calls] == ["list_files", "submit"]
    msg = {
        "role": "assistant",
        "content": "thinking",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "submit"}}],
    }
    reply = parse_reply(msg)
    assert reply.message == msg and reply.calls[0].call.tool == "submit"
    assert parse_reply(b"x" * 1_000_001).calls[0].error.count("1,000,000") == 1


def test_several_calls_in_one_reply_run_in_order_and_grade(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    env.reset()
    text = (
        "Writing the solution, then checking it.\n"
        + block("write_file", path="solution.cpp", content=CPU_SOLUTION)
        + block("bash", command="cat solution.cpp | wc -l")
        + block("read_file", path="missing.txt")
    )
    obs, reward, term, _trunc, info = env.step(text)
    assert not term and reward == 0 and info["calls"] == 3 and info["step"] == 1
    assert obs.index("[tool call 1 of 3: write_file]") < obs.index("[tool call 2 of 3: bash]")
    assert "exit code: 0" in obs and "2" in obs.split("[tool call 2 of 3: bash]")[1]
    assert "[tool call 3 of 3: read_file]\nerror: read_file: no such file" in obs
    assert "no such file" in info["error"]
    msgs = env.messages
    assert msgs[2] == {"role": "assistant", "content": text}
    assert [m["role"] for m in msgs[3:]] == ["tool", "tool", "tool"]
    assert [m["name"] for m in msgs[3:]] == ["write_file", "bash", "read_file"]
    assert len({m["tool_call_id"] for m in msgs[3:]}) == 3
    assert msgs[4]["content"].startswith("exit code: 0")
    # submit ends the reply: a call after it is not run
    obs, reward, term, _, info = env.step(block("submit") + block("bash", command="touch late"))
    assert term and reward == 1.0 and info["is_success"] is True
    assert "not run: the episode ended at submit" in obs
    assert [s.tool for s in info["trajectory"].steps] == [
        "write_file", "bash", "read_file", "submit", "bash",
    ]  # fmt: skip
    env.close()


def test_text_without_a_call_and_malformed_blocks_are_observations(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, max_steps=10)
    env.reset()
    obs, _, term, trunc, _info = env.step("I think the answer is to add two numbers.")
    assert obs.startswith("error: no tool call found") and "<tool_call>" in obs
    assert all(t in obs for t in ("bash", "write_file", "submit")) and not (term or trunc)
    assert env.messages[-2:] == [
        {"role": "assistant", "content": "I think the answer is to add two numbers."},
        {"role": "user", "content": obs},
    ]
    obs, _, term, _, _info = env.step('<tool_call>{"name": "bash", "arguments": {</tool_call>')
    assert obs.startswith("error: tool call 1: not valid JSON") and not term
    assert env.messages[-1]["role"] == "tool" and env.messages[-1]["content"] == obs
    obs, *_ = env.step(block("bash", command="echo ok") + "<tool_call>[1]</tool_call>")
    assert (
        "ok" in obs and "[tool call 2 of 2: unparsed]\nerror: tool call 2: expected a JSON" in obs
    )
    env.close()


def test_tool_call_lists_keep_the_models_message(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    env.reset()
    calls = [
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "echo 1"}'}},
        {"id": "b", "type": "function", "function": {"name": "bash", "arguments": '{"command": "echo 2"}'}},
        {"type": "function", "function": {"name": "list_files", "arguments": "{}"}},
    ]  # fmt: skip
    obs, *_ = env.step(calls)
    assert "stdout:\n1" in obs and "stdout:\n2" in obs
    msgs = env.messages
    assistant = msgs[2]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert [c["id"] for c in assistant["tool_calls"]][:2] == ["a", "b"]
    assert assistant["tool_calls"][0] == calls[0]
    third = assistant["tool_calls"][2]["id"]  # filled in where the model gave none
    assert [m["tool_call_id"] for m in msgs[3:]] == ["a", "b", third]
    env.close()
