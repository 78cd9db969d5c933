"""The trainer adapters with question sources: TRL's environment class has the one tool
``answer``; skyrl_gym makes ``cudaenv-questions`` envs; the verifiers env runs a question
episode against a scripted server. Each real library, each only when installed."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import pytest

from cudaenv.problems.loader import load_suite
from tests.agents.scripted_server import ScriptedServer, tool_call

SOURCE = "questions:seed=17,count=8,kinds=exec-output+race"


def test_trl_question_env_has_one_tool_and_scores_answers() -> None:
    pytest.importorskip("trl", reason="the trl extra is not installed")
    from cudaenv.integrations.trl import dataset_rows, environment_factory

    suite = load_suite(SOURCE)
    rows = dataset_rows(SOURCE, groups=["race"])
    assert [r["task_id"] for r in rows] == suite.filter(groups=["race"]).ids
    assert rows[0]["prompt"][0]["role"] == "system" and rows[0]["prompt"][1]["content"] == ""
    Env = environment_factory(SOURCE, prompt_style="cot")
    tools = [n for n, _ in inspect.getmembers(Env, inspect.isfunction) if not n.startswith("_")]
    assert tools == ["answer", "get_reward", "reset"]
    from transformers.utils import get_json_schema

    assert get_json_schema(Env.answer)["function"]["parameters"]["required"] == ["answer"]
    env = Env()
    q = suite[rows[0]["task_id"]]
    text = env.reset(**rows[0])
    assert q.question in text and "step by step" in text
    assert env.answer(json.dumps(q.expected)) == "correct" and env.get_reward() == 1.0
    env.reset(task_id=q.task_id)
    assert env.get_reward() == 0.0  # never answered
    env.reset(task_id=q.task_id)
    env.answer("[ANSWER] nonsense [/ANSWER]")
    assert (
        env.get_reward() == 0.0
        and env.info is not None
        and "not a JSON value" in env.info["reason"]
    )
    with pytest.raises(ValueError, match="sandbox"):
        environment_factory(SOURCE, sandbox="local")


def test_skyrl_makes_question_envs_from_rows() -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="the skyrl extra is not installed")
    from cudaenv.integrations.skyrl import skyrl_rows

    suite = load_suite(SOURCE)
    rows = skyrl_rows(SOURCE)
    assert {r["env_class"] for r in rows} == {"cudaenv-questions"} and len(rows) == 8
    for row, right in ((rows[0], True), (rows[1], False)):
        q = suite[row["task_id"]]
        env = skyrl_gym.make("cudaenv-questions", env_config={"source": SOURCE}, extras=row)
        chat, meta = env.init(row["prompt"])
        assert (
            q.question in chat[1]["content"]
            and "[ANSWER]" in chat[0]["content"]
            and meta["kind"] == q.kind
        )
        answer = json.dumps(q.expected) if right else "[]"
        out = env.step(f"Let me think.\n[ANSWER] {answer} [/ANSWER]")
        assert (
            out["done"] and out["reward"] == (1.0 if right else 0.0) and out["observations"] == []
        )
        assert env.get_metrics()["is_success"] == (1.0 if right else 0.0)
        json.dumps(out["metadata"])
        env.close()


def test_verifiers_runs_a_question_episode() -> None:
    vf = pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")
    from cudaenv.integrations.verifiers import load_environment

    suite = load_suite(SOURCE)
    q = suite[0]

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        asked = next(x for x in suite if x.question in body["messages"][-1]["content"])
        return tool_call("answer", answer=json.dumps(asked.expected))

    env = load_environment(SOURCE, ids=[q.task_id])
    (task,) = list(env.taskset)
    assert task.data.task_id == q.task_id

    async def run(srv: ScriptedServer) -> Any:
        ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=srv.base_url))
        async with env.serving():
            (slot,) = env.slots(task, 1)
            return await env.run_slot(slot, ctx)

    with ScriptedServer([], responder=respond) as srv:
        episode = asyncio.run(run(srv))
        tools = srv.requests[0]["tools"]
    (trace,) = episode.traces
    assert episode.ok and trace.reward == 1.0 and trace.metrics["is_success"] == 1.0
    assert [t["function"]["name"] for t in tools] == ["answer"]
