"""claude-code and opencode in the default mode: no network, every model call via the gateway.

``cudaenv.make(problem)`` + the agent, against the scripted servers: the CPU fixture problem is
solved (reward 1), every model call is in ``trajectory.model_calls`` with its usage, the
turns are there, and from inside the episode the real key is in no environment, file or
``/proc`` entry while the session token is (the search can find what is there). A budget
trips: the episode ends truncated with the gateway's reason and is still graded.

Each takes seconds (not ``slow``); skipped when the CLI is not installed (``.ci/agents-setup.sh`` installs both).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import cudaenv
from cudaenv.agents.installed import ClaudeCodeAgent, OpenCodeAgent
from cudaenv.gateway import PriceTable
from cudaenv.problems import load_suite
from tests.agents.anthropic_server import AnthropicServer, text, tool_use
from tests.agents.openai_stream_server import StreamingScriptedServer
from tests.agents.scripted_server import text as oa_text
from tests.agents.scripted_server import tool_call
from tests.conftest import CPU_SOLUTION, need_image

KEY = "sk-upstream-secret-0123456789abcdef"
# the key put together inside the shell (never whole in an argv or a file), then searched for
# in every process's environment and command line and in the writable and mounted places; the
# session token (the CLI's $ANTHROPIC_API_KEY) is searched for the same way, as a control
SEARCH = (
    "k=$(printf '%s%s' sk-upstream -secret-0123456789abcdef); "
    "t=$(printf '%s' \"$ANTHROPIC_API_KEY\"); "
    "procs() { cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'; }; "
    'echo "key_in_procs=$(procs | grep -cF -f <(printf \'%s\\n\' "$k"))"; '
    'echo "key_in_files=$(grep -rlsF -f <(printf \'%s\\n\' "$k") /tmp /workspace /run | wc -l)"; '
    'echo "token_in_procs=$(procs | grep -cF -f <(printf \'%s\\n\' "$t"))"'
)


def needs(binary: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which(binary) is None, reason=f"{binary!r} is not installed (.ci/agents-setup.sh)"
    )


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def assert_every_call_captured(traj, calls_made: int) -> None:
    gen = [c for c in traj.model_calls if c["api"] is not None]
    assert len(gen) == calls_made >= 2
    assert all(c["status"] == 200 and c["usage"]["reported"] for c in gen)
    assert all(c["usage"]["input_tokens"] + c["usage"]["output_tokens"] > 0 for c in gen)
    assert len(traj.turns) == len(gen) and all(t.message for t in traj.turns)
    assert traj.usage["input_tokens"] == sum(c["usage"]["input_tokens"] for c in gen)
    assert traj.usage["output_tokens"] == sum(c["usage"]["output_tokens"] for c in gen)
    assert KEY not in traj.model_dump_json()


@needs("claude")
def test_claude_code_solves_through_the_gateway_and_holds_no_key(
    monkeypatch: pytest.MonkeyPatch, cpu_problem
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    script = [
        tool_use("Bash", command=SEARCH, description="look around"),
        tool_use("Write", file_path="{cwd}/solution.cpp", content=CPU_SOLUTION),
        text("Wrote solution.cpp."),
    ]
    prices = PriceTable(prices={"scripted-*": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}})
    with AnthropicServer(script) as srv:
        agent = ClaudeCodeAgent(
            model="scripted-model", base_url=srv.base_url, max_turns=8, timeout_s=180,
            prices=prices,
        )  # fmt: skip
        env = cudaenv.make(cpu_problem)
        assert not env.sandbox_network
        traj = agent.run(env)
        agent_calls = len(srv.agent_requests)
        made = sum(1 for p in srv.paths if p.split("?")[0] == "/v1/messages")
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert traj.terminated and not traj.truncated
    assert_every_call_captured(traj, made)
    assert agent_calls == 3
    found = dict(re.findall(r"(\w+_in_\w+)=(\d+)", traj.steps[0].observation))
    assert traj.steps[0].tool == "Bash" and len(found) == 3, traj.steps[0].observation
    assert int(found["token_in_procs"]) > 0  # the search finds what is there
    assert found["key_in_procs"] == "0" and found["key_in_files"] == "0"
    summary = agent.last_session_summary
    assert summary is not None and summary["cost_usd"] == pytest.approx(traj.cost_usd)
    assert traj.cost_usd > 0 and summary["unpriced_calls"] == 0


@needs("claude")
def test_a_budget_trip_truncates_and_is_still_graded(cpu_problem) -> None:
    write = tool_use("Write", file_path="{cwd}/solution.cpp", content=CPU_SOLUTION)
    ls = tool_use("Bash", command="ls", description="list files")
    with AnthropicServer([write], default=ls) as srv:
        agent = ClaudeCodeAgent(
            model="scripted-model", base_url=srv.base_url, max_turns=20, timeout_s=180,
            budget={"max_requests": 3},
        )  # fmt: skip
        traj = agent.run(cudaenv.make(cpu_problem))
        agent_calls = len(srv.agent_requests)
    assert traj.truncated and traj.truncation_reason == "gateway_requests"
    assert not traj.terminated
    assert traj.verdict is not None and traj.reward == 1.0  # the solution written is graded
    assert agent_calls <= 3
    assert traj.model_calls[-1]["refused"] == "gateway_requests"
    assert traj.steps[-1].tool == "submit"


@needs("opencode")
def test_opencode_solves_through_the_gateway(cpu_problem) -> None:
    script = [
        tool_call("write", filePath="{cwd}/solution.cpp", content=CPU_SOLUTION),
        oa_text("Wrote solution.cpp."),
    ]
    with StreamingScriptedServer(script, usage=(100, 20)) as srv:
        agent = OpenCodeAgent(model="scripted", base_url=srv.base_url, max_turns=8, timeout_s=180)
        traj = agent.run(cudaenv.make(cpu_problem))
        agent_calls = len(srv.agent_requests)
        made = len(srv.requests)
        first = srv.agent_requests[0]
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert [s.tool for s in traj.steps] == ["write", None, "submit"]
    assert_every_call_captured(traj, made)
    assert agent_calls == 2 and first["model"] == "scripted"
    assert traj.usage["input_tokens"] >= 200 and traj.usage["turns"] == 2


@pytest.mark.docker
@needs("claude")
def test_claude_code_in_a_docker_sandbox_through_the_gateway(cpu_problem) -> None:
    image = "cudaenv-agent-cpu:latest"
    need_image(image)
    script = [
        tool_use("Write", file_path="{cwd}/solution.cpp", content=CPU_SOLUTION),
        text("Wrote solution.cpp."),
    ]
    with AnthropicServer(script) as srv:
        agent = ClaudeCodeAgent(
            model="scripted-model", base_url=srv.base_url, max_turns=8, timeout_s=180
        )
        env = cudaenv.make(cpu_problem, sandbox="docker", sandbox_options={"image": image})
        traj = agent.run(env)
    # the agent image has no C++ compiler, so grading there is an infrastructure failure;
    # what is checked here is the CLI's side: it reached the model through the socket only
    assert agent.last_result is not None and agent.last_result.exit_code == 0
    assert traj.steps[0].tool == "Write" and "created" in traj.steps[0].observation
    assert [c["status"] for c in traj.model_calls if c["api"]] == [200] * len(traj.turns)
    assert len(traj.turns) >= 2
