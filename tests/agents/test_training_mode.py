"""OpenAIAgent(training=True) and arun, through the real SDK against the scripted HTTP server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import cudaenv
from cudaenv.agents import make_agent
from cudaenv.agents.turns import turn_from_response
from cudaenv.env.trajectory import Trajectory
from cudaenv.errors import SpecError
from cudaenv.problems import load_suite
from tests.agents.scripted_server import (
    ScriptedServer,
    prompt_ids,
    text,
    tool_call,
    tool_calls,
    with_reasoning,
)
from tests.conftest import CPU_SOLUTION, comparable_trajectory

pytest.importorskip("openai")

WRITE = tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION)
SOLVE = [with_reasoning(WRITE, "Write the kernel first."), tool_call("submit")]
# every kind of reply: text (nudged), malformed arguments, reasoning, two calls in one reply
MIXED = [
    text("Let me look around."),
    tool_call("bash", raw_arguments="{oops"),
    with_reasoning(tool_call("bash", command="ls"), "List the files."),
    tool_calls(("bash", {"command": "echo hi"}), ("read_file", {"path": "solution.cpp"})),
    WRITE,
    tool_call("submit"),
]


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def agent_for(server: ScriptedServer, **options: Any):
    opts = {
        "model": "scripted",
        "base_url": server.base_url,
        "backoff_s": 0.001,
        "max_backoff_s": 0.01,
        "max_attempts": 3,
        "training": True,
    }
    opts.update(options)
    return make_agent("openai", **opts)


def sent_back(message: dict[str, Any]) -> dict[str, Any]:
    """What the next request must carry for a reply: role, content, reasoning, tool calls."""
    keys = ("role", "content", "reasoning_content", "tool_calls")
    return {k: message[k] for k in keys if k in message}


def assert_prefix_stable(srv: ScriptedServer) -> None:
    for i in range(1, len(srv.requests)):
        prev, cur = srv.requests[i - 1]["messages"], srv.requests[i]["messages"]
        assert cur[: len(prev)] == prev, f"request {i} rewrote history"
        reply = srv.responses[i - 1]["choices"][0]["message"]
        assert cur[len(prev)] == sent_back(reply), f"request {i} lost or changed the reply"


@pytest.mark.parametrize("prompt_ids_on", ["response", "choice"])  # vLLM, SGLang
def test_token_fields_survive_into_turns_and_json(cpu_problem, prompt_ids_on: str) -> None:
    with ScriptedServer(SOLVE, prompt_ids_on=prompt_ids_on) as srv:
        traj = agent_for(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and len(traj.turns) == 2 == len(srv.responses)
    for turn, request, response in zip(traj.turns, srv.requests, srv.responses, strict=True):
        assert request["logprobs"] is True and request["return_token_ids"] is True
        choice = response["choices"][0]
        assert turn.prompt_token_ids == prompt_ids(request["messages"])
        assert turn.completion_token_ids == choice["token_ids"] and turn.completion_token_ids
        assert turn.completion_logprobs == [e["logprob"] for e in choice["logprobs"]["content"]]
        assert len(turn.completion_logprobs) == len(turn.completion_token_ids)
        assert turn.message == choice["message"]  # exactly as returned, extra keys included
        assert turn.finish_reason == "tool_calls"
        assert turn.extra == {"kv_transfer_params": {"scripted": True}}
    assert traj.turns[0].message["reasoning_content"] == "Write the kernel first."
    back = Trajectory.model_validate_json(traj.model_dump_json())
    assert back.turns == traj.turns and back == traj
    assert json.loads(traj.model_dump_json())["turns"][1]["completion_token_ids"]


def test_requests_are_prefix_stable_for_every_kind_of_reply(cpu_problem) -> None:
    with ScriptedServer(MIXED) as srv:
        traj = agent_for(srv).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0 and len(srv.requests) == len(MIXED) == len(traj.turns)
    assert_prefix_stable(srv)
    # the reasoning goes back into the conversation; the fake tokenizer sees prefixes grow
    assert srv.requests[3]["messages"][-2]["reasoning_content"] == "List the files."
    for a, b in zip(traj.turns, traj.turns[1:], strict=False):
        assert b.prompt_token_ids[: len(a.prompt_token_ids)] == a.prompt_token_ids


def test_context_overflow_ends_truncated_instead_of_rewriting(cpu_problem) -> None:
    big = tool_call("bash", command="seq 1 3000")
    script = [big, big, tool_call("bash", command="echo last"), tool_call("submit")]
    with ScriptedServer(script) as srv:
        agent = agent_for(srv, context_tokens=9000)
        traj = agent.run(cudaenv.make(cpu_problem))
    assert traj.truncated and not traj.terminated
    assert traj.truncation_reason == "context_tokens"
    assert traj.verdict is not None  # the workspace is still graded, as it stands
    assert len(srv.requests) < len(script) and traj.steps[-1].tool == "submit"
    assert_prefix_stable(srv)
    sent = [m for r in srv.requests for m in r["messages"]]
    assert not any(str(m.get("content")).startswith("[elided") for m in sent)
    assert agent.conversation_tokens(srv.requests[-1]["messages"]) <= 9000


def test_evaluation_mode_sends_no_token_fields_and_keeps_every_reply(cpu_problem) -> None:
    """Evaluation asks for no token data, yet keeps what the model said: each reply as
    returned (text and reasoning beside the calls), the conversation, the graded files."""
    with ScriptedServer(SOLVE) as srv:
        traj = agent_for(srv, training=False).run(cudaenv.make(cpu_problem))
    assert traj.reward == 1.0
    assert all("logprobs" not in r and "return_token_ids" not in r for r in srv.requests)
    assert "reasoning_content" not in srv.requests[1]["messages"][2]  # sent back as before
    assert [t.message for t in traj.turns] == [r["choices"][0]["message"] for r in srv.responses]
    assert traj.turns[0].message["reasoning_content"] == "Write the kernel first."
    assert all(t.completion_token_ids is None and t.prompt_token_ids is None for t in traj.turns)
    assert traj.messages[: len(srv.requests[-1]["messages"])] == srv.requests[-1]["messages"]
    assert traj.messages[-2]["tool_calls"][0]["function"]["name"] == "submit"
    assert traj.messages[-1]["role"] == "tool"  # the grading's observation ends it
    assert [f.path for f in traj.solution_files] == ["solution.cpp"]


def test_extra_body_passes_through_and_none_drops_a_training_key(cpu_problem) -> None:
    extra = {"return_token_ids": None, "top_k": 5}
    with ScriptedServer(SOLVE) as srv:
        traj = agent_for(srv, extra_body=extra).run(cudaenv.make(cpu_problem))
    first = srv.requests[0]
    assert "return_token_ids" not in first and first["top_k"] == 5 and first["logprobs"] is True
    assert traj.turns[0].prompt_token_ids is None and traj.turns[0].completion_token_ids is None
    assert traj.turns[0].completion_logprobs  # logprobs still came back


def test_token_ids_read_from_logprob_tokens_when_no_token_ids() -> None:
    """vLLM's --return-tokens-as-token-ids writes each logprob token as "token_id:<n>"."""
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"role": "assistant", "content": "ab"},
                "logprobs": {
                    "content": [
                        {"token": "token_id:17", "logprob": -1},
                        {"token": "token_id:4", "logprob": -0.5},
                    ]
                },
            }
        ]
    }
    turn = turn_from_response(body)
    assert turn.completion_token_ids == [17, 4] and turn.completion_logprobs == [-1.0, -0.5]
    assert turn.prompt_token_ids is None and turn.finish_reason == "length"
    body["choices"][0]["logprobs"]["content"][1]["token"] = "b"  # plain text tokens: no ids
    assert turn_from_response(body).completion_token_ids is None


async def arun_once(agent: Any, env: Any) -> Trajectory:
    try:
        return await agent.arun(env)
    finally:
        await agent.aclose()


@pytest.mark.parametrize("env_class", ["CudaEnv", "ProcessEnv"])
@pytest.mark.parametrize("training", [True, False])
def test_async_variant_gives_the_sync_trajectory(cpu_problem, training: bool, env_class) -> None:
    with ScriptedServer(MIXED) as sync_srv:
        sync = agent_for(sync_srv, training=training).run(cudaenv.make(cpu_problem))
    with ScriptedServer(MIXED) as async_srv:
        agent = agent_for(async_srv, training=training)
        env = getattr(cudaenv, env_class)(cpu_problem)
        result = asyncio.run(arun_once(agent, env))
    assert sync.reward == result.reward == 1.0
    assert comparable_trajectory(result) == comparable_trajectory(sync)
    assert async_srv.requests == sync_srv.requests
    assert len(result.turns) == len(MIXED)  # every reply, in either mode


def test_concurrent_arun_on_one_agent_and_async_retries(cpu_problem) -> None:
    both = tool_calls(
        ("write_file", {"path": "solution.cpp", "content": CPU_SOLUTION}), ("submit", {})
    )
    with ScriptedServer([], default=both, fail_first=2) as srv:
        agent = agent_for(srv)

        async def main() -> list[Trajectory]:
            trajs = await asyncio.gather(*(agent.arun(cudaenv.make(cpu_problem)) for _ in range(3)))
            await agent.aclose()  # closed, then a later episode opens a fresh client
            last = await agent.arun(cudaenv.make(cpu_problem))
            await agent.aclose()
            return [*trajs, last]

        trajs = asyncio.run(main())
    assert srv.failures_sent == 2 and len(srv.requests) == 6  # 2 retried 500s + 4 episodes
    assert [t.reward for t in trajs] == [1.0] * 4
    assert [len(t.turns) for t in trajs] == [1] * 4
    assert len({id(t) for t in trajs}) == 4


def test_bad_budgets_name_the_field() -> None:
    with pytest.raises(SpecError, match="context_tokens must be >= 1, got 0"):
        make_agent("openai", training=True, context_tokens=0)
    with pytest.raises(ValueError, match="field=max_turns"):
        make_agent("openai", max_turns=0)
