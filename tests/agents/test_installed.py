"""Installed coding-agent CLIs (claude-code, opencode) driven against scripted model servers.

The CLIs run for real, unmodified, inside the episode's bubblewrap sandbox on the CPU fixture
problem; the servers speak the real wire protocols (Anthropic Messages with SSE, OpenAI chat
completions with SSE). By default the sandbox has no network and the CLI reaches the server
through the model gateway (``tests/agents/test_gateway_mode.py`` checks what that adds); the
direct mode (``network=True``) is checked here too. The CLI tests are ``slow`` and skip when
the binary is not installed (``.ci/agents-setup.sh`` installs both); recipe, parser and
refusal tests run everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

import cudaenv
from cudaenv.agents.cli_events import parse_claude_stream, parse_opencode_json
from cudaenv.agents.installed import (
    CLI_NOTE,
    ClaudeCodeAgent,
    InstalledAgent,
    OpenCodeAgent,
    cli_instruction,
)
from cudaenv.agents.recipes import load_recipe, recipe_names, render_config, render_run
from cudaenv.errors import AgentError, SpecError
from cudaenv.problems import load_suite
from tests.agents.anthropic_server import AnthropicServer, text, tool_use
from tests.agents.openai_stream_server import StreamingScriptedServer
from tests.agents.scripted_server import text as oa_text
from tests.agents.scripted_server import tool_call
from tests.conftest import CPU_SOLUTION

# the CLI's time limit against a server that never answers: long enough for a node CLI to
# start and reach the server on a loaded CI machine (the test asserts it did)
HANG_TIMEOUT_S = 45.0
MARK_ENV = "CUDAENV_TEST_MARK"  # tags the CLI's processes, to find any it leaves behind


def needs(binary: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which(binary) is None,
        reason=f"{binary!r} is not installed (run .ci/agents-setup.sh)",
    )


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def networked_env(problem):
    """Direct mode: the CLI shares the host's network (the agent warns)."""
    return cudaenv.make(problem, sandbox_options={"network": True})


def run_direct(agent: InstalledAgent, problem):
    with pytest.warns(UserWarning, match="direct mode"):
        return agent.run(networked_env(problem))


def _live_with_env(entry: bytes) -> list[int]:
    """Host pids of the live (not zombie) processes whose environment holds ``entry``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if entry not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
        except (OSError, IndexError):
            continue
        found.append(int(pid))
    return found


def run_and_list_leftovers(agent: InstalledAgent, problem, mark: str):
    """Run ``agent`` to its end (gateway mode); then the CLI processes still alive."""
    env = cudaenv.make(problem)
    try:
        traj = agent.run(env)
        return traj, _live_with_env(f"{MARK_ENV}={mark}".encode())
    finally:
        env.close()


def assert_killed_at_time_limit(agent: InstalledAgent, traj, left: list[int]) -> None:
    """The CLI was stopped by its time limit, not by an exit of its own: its command timed
    out (no exit code), none of its processes is left, and the workspace was still graded."""
    assert agent.last_result is not None and agent.last_result.timed_out
    assert agent.last_result.exit_code is None
    assert left == []
    assert traj.truncated and traj.truncation_reason == "time_limit"
    assert traj.verdict is not None and traj.reward == 0.0


# ---------------------------------------------------------------------- recipes and parsers


def test_recipes_are_pinned_and_render() -> None:
    assert {"claude-code", "opencode"} <= set(recipe_names())
    claude, opencode = load_recipe("claude-code"), load_recipe("opencode")
    for r in (claude, opencode):
        assert r.version.count(".") == 2 and r.version[0].isdigit(), r.version
        assert f"{r.npm_package}@{r.version}" in r.install_command()
        assert "--prefix /usr/local" in r.install_command()
        assert "network=True" in r.network_note
    cmd = render_run(claude, {"max_turns": 3, "model": "m x", "instruction_file": "/h/i.md"})
    assert "--output-format=stream-json" in cmd and "--max-turns 3" in cmd and "'m x'" in cmd
    assert (
        claude.env["IS_SANDBOX"] == "1"
        and claude.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    )
    assert opencode.env["OPENCODE_FAKE_VCS"] == "git"
    values = {
        "provider": "p",
        "model": "m",
        "base_url": "http://h:1/v1",
        "api_key": 'k"',
        "max_turns": 4,
    }
    config = json.loads(render_config(opencode.config_template("opencode.json"), values))
    assert config["provider"]["p"]["options"] == {"baseURL": "http://h:1/v1", "apiKey": 'k"'}
    assert config["model"] == "p/m" and config["agent"]["build"]["steps"] == 4
    with pytest.raises(SpecError, match="no agent recipe"):
        load_recipe("vim")


def test_cli_instruction_is_the_task_without_the_env_tools(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    try:
        text, _ = env.reset()
        task = env.instruction.task
        out = cli_instruction(task)
    finally:
        env.close()
    assert text.startswith(task) and "write_file" in text[len(task) :]
    assert out.startswith(task) and out.endswith(CLI_NOTE)
    assert "write_file" not in out and "Tools:" not in out and "cpu-add" in out


def test_claude_parser_adds_up_usage_when_cut_off() -> None:
    msg = {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
           "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 5}}  # fmt: skip
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "boom"}],
        "is_error": True,
    }
    lines = [
        json.dumps({"type": "assistant", "message": msg}),
        # another block of the same message repeats its usage: counted once
        json.dumps(
            {"type": "assistant", "message": {**msg, "content": [{"type": "text", "text": "hm"}]}}
        ),
        json.dumps({"type": "user", "message": {"content": [result]}}),
        '{"type": "assistant", "message": {"id": "m2", "content": [{"type": "te',  # killed mid-line
    ]
    run = parse_claude_stream("\n".join(lines))
    assert [s.tool for s in run.steps] == ["Bash", None] and run.steps[1].args == {"text": "hm"}
    assert run.steps[0].observation == "boom" and run.steps[0].error == "boom"
    assert run.usage == {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_read_tokens": 5,
        "cache_write_tokens": 0,
        "total_tokens": 17,
    }
    assert not run.finished and run.turns == 1


def test_opencode_parser_reads_steps_and_errors() -> None:
    lines = [
        {
            "type": "tool_use",
            "part": {
                "tool": "bash",
                "callID": "c1",
                "state": {"status": "error", "input": {"command": "x"}, "error": "nope"},
            },
        },
        {
            "type": "step_finish",
            "part": {
                "tokens": {
                    "input": 7,
                    "output": 3,
                    "reasoning": 1,
                    "cache": {"read": 2, "write": 0},
                },
                "cost": 0.5,
            },
        },
        {"type": "error", "error": {"name": "APIError", "data": {"message": "bad gateway"}}},
    ]
    run = parse_opencode_json("\n".join(json.dumps(x) for x in lines))
    assert run.steps[0].tool == "bash" and run.steps[0].error == "nope"
    assert (
        run.usage["input_tokens"] == 7 and run.usage["total_tokens"] == 13 and run.cost_usd == 0.5
    )
    assert run.errors == ["APIError: bad gateway"]


# ---------------------------------------------------------------------- refusals (no CLI needed)


def test_direct_mode_warns_and_needs_the_network(cpu_problem) -> None:
    agent = ClaudeCodeAgent(model="scripted", base_url="http://127.0.0.1:9", gateway=False)
    env = cudaenv.make(cpu_problem)
    try:
        with (
            pytest.warns(UserWarning, match="real API key"),
            pytest.raises(AgentError, match="network"),
        ):
            agent.run(env)
    finally:
        env.close()


def test_gateway_mode_refuses_a_sandbox_with_network(cpu_problem) -> None:
    agent = ClaudeCodeAgent(model="scripted", base_url="http://127.0.0.1:9", gateway=True)
    env = networked_env(cpu_problem)
    try:
        with pytest.raises(AgentError, match="without network"):
            agent.run(env)
    finally:
        env.close()


def test_missing_binary_is_an_agent_error(cpu_problem) -> None:
    recipe = load_recipe("opencode").model_copy(update={"binary": "cudaenv-no-such-cli"})
    env = cudaenv.make(cpu_problem)
    try:
        with pytest.raises(AgentError, match=r"not on the sandbox's PATH.*npm install -g"):
            InstalledAgent(recipe, base_url="http://127.0.0.1:9/v1").run(env)
    finally:
        env.close()


def test_grading_never_gets_the_network(cpu_problem) -> None:
    from cudaenv.grading.request import GradeRequest, grade_here

    seen = {}

    def grader(request: GradeRequest):
        seen.update(request.sandbox_options or {})
        seen["called"] = True
        return grade_here(request)

    env = networked_env(cpu_problem)
    env.grader = grader
    env.reset()
    env.step({"tool": "submit", "args": {}})
    assert seen.get("called") and "network" not in seen


def test_no_api_key_without_a_local_server(monkeypatch: pytest.MonkeyPatch, cpu_problem) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AgentError, match="ANTHROPIC_API_KEY"):
        ClaudeCodeAgent().run(networked_env(cpu_problem))


# ---------------------------------------------------------------------- claude-code


def claude(srv: AnthropicServer, **options) -> InstalledAgent:
    opts = {"model": "scripted-model", "base_url": srv.base_url, "max_turns": 8, "timeout_s": 180}
    return ClaudeCodeAgent(**(opts | options))


@pytest.mark.slow
@needs("claude")
def test_claude_code_writes_the_solution_in_direct_mode(cpu_problem) -> None:
    script = [
        tool_use("Write", file_path="{cwd}/solution.cpp", content=CPU_SOLUTION),
        text("Wrote solution.cpp."),
    ]
    with AnthropicServer(script) as srv:
        agent = claude(srv)
        traj = run_direct(agent, cpu_problem)
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert traj.agent == "claude-code" and traj.terminated and not traj.truncated
    write = traj.steps[0]
    assert write.tool == "Write" and write.args["content"] == CPU_SOLUTION
    assert write.args["file_path"].endswith("/solution.cpp") and "created" in write.observation
    assert traj.steps[1].tool is None and traj.steps[1].args == {"text": "Wrote solution.cpp."}
    assert traj.steps[-1].tool == "submit"
    # two agent turns of the server's usage (120 in, 30 out, 50 cache read, 10 cache write)
    assert traj.usage == {"input_tokens": 240, "output_tokens": 60, "cache_read_tokens": 100,
                          "cache_write_tokens": 20, "total_tokens": 420, "turns": 2}  # fmt: skip
    assert traj.cost_usd is not None and traj.cost_usd > 0
    first = srv.agent_requests[0]
    assert first["model"] == "scripted-model" and first["stream"] is True
    assert {"Write", "Edit", "Bash", "Read"} <= {t["name"] for t in first["tools"]}
    sent = json.dumps(first["messages"])
    assert "cpu-add" in sent and "simply stop" in sent and "write_file" not in sent
    assert all(p.startswith("/v1/messages") for p in srv.paths)


@pytest.mark.slow
@needs("claude")
def test_claude_code_empty_session_scores_zero(cpu_problem) -> None:
    with AnthropicServer([text("I will not do anything.")]) as srv:
        traj = claude(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 0.0 and traj.terminated
    assert [s.tool for s in traj.steps] == [None, "submit"] and traj.usage["turns"] == 1


@pytest.mark.slow
@needs("claude")
def test_claude_code_turn_limit_truncates(cpu_problem) -> None:
    ls = tool_use("Bash", command="ls", description="list files")
    with AnthropicServer([ls], default=ls) as srv:
        traj = claude(srv, max_turns=2).run(cudaenv.make(cpu_problem))
    assert traj.truncated and traj.truncation_reason == "max_turns" and traj.reward == 0.0
    assert [s.tool for s in traj.steps if s.tool] == ["Bash", "Bash", "submit"]
    assert "test" not in traj.steps[0].observation.split()  # hidden tests never reach the sandbox


@pytest.mark.slow
@needs("claude")
def test_claude_code_hung_server_is_killed_and_graded(cpu_problem) -> None:
    mark = uuid.uuid4().hex
    with AnthropicServer([], hang=True) as srv:
        agent = claude(srv, timeout_s=HANG_TIMEOUT_S, extra_env={MARK_ENV: mark})
        traj, left = run_and_list_leftovers(agent, cpu_problem, mark)
    assert srv.requests, "the CLI never reached the server"
    assert_killed_at_time_limit(agent, traj, left)


# ---------------------------------------------------------------------- opencode


def opencode(srv: StreamingScriptedServer, **options) -> InstalledAgent:
    opts = {"model": "scripted", "base_url": srv.base_url, "max_turns": 8, "timeout_s": 180}
    return OpenCodeAgent(**(opts | options))


@pytest.mark.slow
@needs("opencode")
def test_opencode_writes_the_solution_in_direct_mode(cpu_problem) -> None:
    script = [
        tool_call("write", filePath="{cwd}/solution.cpp", content=CPU_SOLUTION),
        oa_text("Wrote solution.cpp."),
    ]
    with StreamingScriptedServer(script, usage=(100, 20)) as srv:
        agent = opencode(srv)
        traj = run_direct(agent, cpu_problem)
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert traj.agent == "opencode" and traj.terminated
    write = traj.steps[0]
    assert write.tool == "write" and write.args["content"] == CPU_SOLUTION and write.observation
    assert [s.tool for s in traj.steps] == ["write", None, "submit"]
    assert traj.usage["input_tokens"] == 200 and traj.usage["output_tokens"] == 40
    assert traj.usage["total_tokens"] == 240 and traj.usage["turns"] == 2
    first = srv.agent_requests[0]
    assert first["model"] == "scripted" and first["stream"] is True
    assert {"write", "edit", "bash", "read"} <= {t["function"]["name"] for t in first["tools"]}
    assert "cpu-add" in json.dumps(first["messages"])


@pytest.mark.slow
@needs("opencode")
def test_opencode_empty_session_scores_zero(cpu_problem) -> None:
    with StreamingScriptedServer([oa_text("Nothing to do.")]) as srv:
        traj = opencode(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 0.0 and traj.terminated
    assert [s.tool for s in traj.steps] == [None, "submit"] and traj.usage["turns"] == 1


@pytest.mark.slow
@needs("opencode")
def test_opencode_hung_server_is_killed_and_graded(cpu_problem) -> None:
    mark = uuid.uuid4().hex
    with StreamingScriptedServer([], hang=True) as srv:
        agent = opencode(srv, timeout_s=HANG_TIMEOUT_S, extra_env={MARK_ENV: mark})
        traj, left = run_and_list_leftovers(agent, cpu_problem, mark)
    assert srv.requests, "the CLI never reached the server"
    assert_killed_at_time_limit(agent, traj, left)
