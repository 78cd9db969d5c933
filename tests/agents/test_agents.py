"""Agents against the cpu fixture problem; the OpenAI agent through the real SDK over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cudaenv
from cudaenv.agents import Agent, make_agent
from cudaenv.errors import AgentError, ModelServerError, SpecError
from cudaenv.problems import load_suite
from tests.agents.scripted_server import ScriptedServer, text, tool_call, tool_calls
from tests.conftest import CPU_SOLUTION

pytest.importorskip("openai")


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def openai_agent(server: ScriptedServer, **options):
    opts = {
        "model": "scripted",
        "base_url": server.base_url,
        "backoff_s": 0.001,
        "max_backoff_s": 0.01,
        "max_attempts": 3,
    }
    opts.update(options)
    return make_agent("openai", **opts)


SOLVE = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), tool_call("submit")]


def test_oracle_scores_one_and_nop_zero(cpu_problem) -> None:
    oracle, nop = make_agent("oracle"), make_agent("nop")
    assert isinstance(oracle, Agent) and isinstance(nop, Agent)
    traj = oracle.run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and traj.agent == "oracle", traj.verdict
    assert [s.tool for s in traj.steps] == ["write_file", "submit"]
    traj = nop.run(cudaenv.make(cpu_problem))
    assert traj.reward == 0.0 and traj.agent == "nop" and traj.terminated


def test_registry_rejects_unknown_names_and_options() -> None:
    with pytest.raises(SpecError, match="unknown agent"):
        make_agent("gpt-5-turbo-ultra")
    with pytest.raises(SpecError, match="bad options"):
        make_agent("nop", model="x")


def test_openai_agent_solves_and_sends_tools(cpu_problem) -> None:
    with ScriptedServer(SOLVE) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and traj.terminated and traj.agent == "openai"
    assert [s.tool for s in traj.steps] == ["write_file", "submit"]
    first = srv.requests[0]
    assert first["model"] == "scripted"
    assert {t["function"]["name"] for t in first["tools"]} >= {"bash", "write_file", "submit"}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    second = srv.requests[1]["messages"]
    assert (
        second[2]["role"] == "assistant"
        and second[2]["tool_calls"][0]["function"]["name"] == "write_file"
    )
    assert (
        second[3]["role"] == "tool"
        and second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]
    )
    assert traj.usage == {
        "prompt_tokens": 200,
        "completion_tokens": 40,
        "total_tokens": 240,
        "turns": 2,
    }


def test_openai_agent_submitting_at_once_scores_zero(cpu_problem) -> None:
    with ScriptedServer([tool_call("submit")]) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 0.0 and traj.terminated and len(srv.requests) == 1


def test_several_tool_calls_in_one_reply(cpu_problem) -> None:
    reply = tool_calls(
        ("write_file", {"path": "solution.cpp", "content": CPU_SOLUTION}), ("submit", {})
    )
    with ScriptedServer([reply]) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and len(srv.requests) == 1


@pytest.mark.parametrize("failure", ["500", "429"])
def test_retries_server_errors_and_rate_limits(cpu_problem, failure: str) -> None:
    with ScriptedServer(SOLVE, fail_first=2, failure=failure) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and srv.failures_sent == 2 and len(srv.requests) == 4


def test_garbage_bodies_exhaust_attempts_then_a_model_server_error(cpu_problem) -> None:
    with (
        ScriptedServer(SOLVE, fail_first=10, failure="garbage") as srv,
        pytest.raises(ModelServerError, match="after 3 attempts"),
    ):
        openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert len(srv.requests) == 3


def test_unreachable_server_is_a_model_server_error(cpu_problem) -> None:
    srv = ScriptedServer([]).start()
    url = srv.base_url
    srv.stop()
    agent = make_agent("openai", model="m", base_url=url, backoff_s=0.001, max_attempts=2)
    with pytest.raises(ModelServerError, match="APIConnectionError"):
        agent.run(cudaenv.make(cpu_problem))


def test_text_reply_gets_a_nudge_and_garbage_arguments_an_error_observation(cpu_problem) -> None:
    script = [text("Let me think."), tool_call("write_file", raw_arguments="{oops"), *SOLVE]
    with ScriptedServer(script) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and traj.usage["turns"] == 4
    nudged = srv.requests[1]["messages"]
    assert nudged[-2] == {"role": "assistant", "content": "Let me think."}
    assert nudged[-1]["role"] == "user" and "submit" in nudged[-1]["content"]
    bad = srv.requests[2]["messages"][-1]
    assert bad["role"] == "tool" and "not valid JSON" in bad["content"]
    assert traj.steps[0].error and traj.steps[0].tool is None


def test_never_submitting_is_truncated_at_max_steps_and_graded(cpu_problem) -> None:
    with ScriptedServer(
        [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION)],
        default=tool_call("bash", command="true"),
    ) as srv:
        traj = openai_agent(srv).run(cudaenv.make(cpu_problem, max_steps=3))
    assert traj.truncated and not traj.terminated and traj.truncation_reason == "max_steps"
    assert traj.reward == 1.0 and len(traj.steps) == 3  # graded on truncation
    with ScriptedServer([], default=tool_call("bash", command="true")) as srv:
        traj = openai_agent(srv).run(
            cudaenv.make(cpu_problem, max_steps=2, grade_on_truncation=False)
        )
    assert traj.truncated and traj.reward == 0.0 and traj.verdict is None


def test_turn_budget_submits_and_marks_truncated(cpu_problem) -> None:
    with ScriptedServer([], default=text("thinking...")) as srv:
        traj = openai_agent(srv, max_turns=3).run(cudaenv.make(cpu_problem))
    assert len(srv.requests) == 3 and traj.truncated and traj.truncation_reason == "max_turns"
    assert not traj.terminated and traj.steps[-1].tool == "submit"
    assert traj.verdict is not None and traj.reward == 0.0 and traj.usage["turns"] == 3


def test_context_budget_elides_oldest_tool_outputs(cpu_problem) -> None:
    big = "seq 1 3000"
    script = [
        tool_call("bash", command=big),
        tool_call("bash", command=big),
        tool_call("bash", command="echo last"),
        tool_call("submit"),
    ]
    with ScriptedServer(script) as srv:
        openai_agent(srv, context_tokens=9000).run(cudaenv.make(cpu_problem))
    last = srv.requests[-1]["messages"]
    tool_msgs = [m for m in last if m["role"] == "tool"]
    assert tool_msgs[0]["content"].startswith("[elided")
    assert "last" in tool_msgs[-1]["content"]
    assert (
        last[0]["role"] == "system"
        and last[1]["role"] == "user"
        and "cpu-add" in last[1]["content"]
    )
    assert all("_elided" not in m for m in last)
    json.dumps(last)


def test_missing_key_without_base_url_is_agent_error(cpu_problem, monkeypatch) -> None:
    monkeypatch.delenv("CUDAENV_TEST_NO_KEY", raising=False)
    agent = make_agent("openai", api_key_env="CUDAENV_TEST_NO_KEY")
    with pytest.raises(AgentError, match="CUDAENV_TEST_NO_KEY"):
        agent.run(cudaenv.make(cpu_problem))
