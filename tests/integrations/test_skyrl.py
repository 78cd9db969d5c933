"""SkyRL adapter, with the real skyrl_gym: made by ``skyrl_gym.make("cudaenv", ...)`` as
SkyRL's generator makes it, driven by text from a scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the skyrl extra (skyrl-gym) is not installed")

from cudaenv.errors import ProblemNotFoundError, SandboxError  # noqa: E402
from cudaenv.integrations import skyrl as adapter  # noqa: E402
from tests.agents.scripted_server import ScriptedServer, text  # noqa: E402
from tests.conftest import (  # noqa: E402
    CPU_SOLUTION,
    descendants,
    sandbox_dirs,
)


def _call(name: str, **args: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"


ORACLE = _call("write_file", path="solution.cpp", content=CPU_SOLUTION) + _call("submit")
NOP = "I will submit as is.\n" + _call("submit")


def _make(source: Path, **config: Any):
    return skyrl_gym.make(
        "cudaenv",
        env_config={"source": str(source), **config},
        extras={"extra_info": {"task_id": "cpu-add"}, "max_turns": 4},
    )


async def _rollout(source: Path, base_url: str, **config: Any) -> tuple[list[dict], dict]:
    """What SkyRL's generator does: init, then generate / step until done, then close."""
    import openai

    env = _make(source, **config)
    loop = asyncio.get_running_loop()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    outputs: list[dict] = []
    try:
        chat, _ = await loop.run_in_executor(None, env.init, [{"role": "user", "content": "p"}])
        done = False
        while not done:
            resp = await client.chat.completions.create(model="m", messages=chat)
            reply = resp.choices[0].message.content or ""
            out = await loop.run_in_executor(None, env.step, reply)
            outputs.append(out)
            chat += [{"role": "assistant", "content": reply}, *out["observations"]]
            done = out["done"]
        return outputs, env.get_metrics()
    finally:
        await loop.run_in_executor(None, env.close)
        await client.close()


@pytest.fixture
def source(cpu_problem_dir: Path) -> Path:
    return cpu_problem_dir.parent


def test_registered_under_cudaenv_and_made_by_skyrl_gym(source: Path) -> None:
    env = _make(source)
    assert isinstance(env, adapter.CudaTextEnv)
    assert isinstance(env, skyrl_gym.Env)
    assert env.max_turns == 4  # the generator's max_turns becomes the step budget
    chat, meta = env.init([{"role": "user", "content": "ignored"}])
    assert [m["role"] for m in chat] == ["system", "user"]
    assert "<tool_call>" in chat[0]["content"] and '"name": "write_file"' in chat[0]["content"]
    assert "cpu-add" in chat[1]["content"] and meta["task_id"] == "cpu-add"
    env.close()
    env.close()  # twice: no error


def test_oracle_text_scores_1_and_nop_0(source: Path) -> None:
    with ScriptedServer([text(ORACLE)]) as srv:
        outs, metrics = asyncio.run(_rollout(source, srv.base_url))
    assert len(outs) == 1 and outs[0]["done"] and outs[0]["reward"] == 1.0
    assert outs[0]["metadata"]["is_success"] is True
    assert outs[0]["metadata"]["reward_valid"] is True
    json.dumps(outs[0]["metadata"])  # JSON-safe: no pydantic objects
    assert metrics == {"steps": 1, "is_success": 1.0, "reward_valid": 1.0}
    with ScriptedServer([text(NOP)]) as srv:
        outs, metrics = asyncio.run(_rollout(source, srv.base_url))
    assert outs[-1]["reward"] == 0.0 and outs[-1]["metadata"]["is_success"] is False
    assert outs[-1]["metadata"]["failure"] == "agent"
    assert metrics["reward_valid"] == 1.0


def test_malformed_arguments_and_no_call_get_error_observations(source: Path) -> None:
    script = [
        text('<tool_call>{"name": "write_file", "arguments": {"path": 7}}</tool_call>'),
        text('<tool_call>{"name": "bash", "arguments": {"command": </tool_call>'),
        text("Let me think about it."),
        text(ORACLE),
    ]
    with ScriptedServer(script) as srv:
        outs, _ = asyncio.run(_rollout(source, srv.base_url))
    assert [o["done"] for o in outs] == [False, False, False, True]
    first, second, third = (o["observations"][0]["content"] for o in outs[:3])
    assert first.startswith("error:") and "path" in first
    assert "not valid JSON" in second
    assert "no tool call found" in third
    assert outs[0]["metadata"]["error"] and outs[0]["reward"] == 0.0
    assert outs[-1]["reward"] == 1.0


def test_broken_sandbox_factory_is_masked_not_scored(source: Path) -> None:
    def broken():
        raise SandboxError("scripted: no sandbox today")

    with ScriptedServer([text(ORACLE)]) as srv:
        outs, metrics = asyncio.run(_rollout(source, srv.base_url, sandbox=broken))
    assert len(outs) == 1 and outs[0]["done"] and outs[0]["reward"] == 0.0
    meta = outs[0]["metadata"]
    assert meta["reward_valid"] is False and meta["failure"] == "infrastructure"
    assert "no sandbox today" in meta["reason"]
    assert metrics["reward_valid"] == 0.0


def test_grading_infrastructure_fault_is_masked(source: str) -> None:
    def grading_box():
        raise SandboxError("scripted: grading host down")

    with ScriptedServer([text(ORACLE)]) as srv:
        outs, metrics = asyncio.run(_rollout(source, srv.base_url, grading_sandbox=grading_box))
    meta = outs[-1]["metadata"]
    assert outs[-1]["done"] and outs[-1]["reward"] == 0.0
    assert meta["reward_valid"] is False and meta["failure"] == "infrastructure"
    assert metrics["reward_valid"] == 0.0 and metrics["is_success"] == 0.0


def test_unknown_task_id_raises_naming_it(source: Path) -> None:
    with pytest.raises(ProblemNotFoundError, match="did you mean cpu-add"):
        skyrl_gym.make("cudaenv", env_config={"source": str(source)}, extras={"task_id": "cpu-ad"})
    with pytest.raises(ValueError, match="task_id"):
        skyrl_gym.make("cudaenv", env_config={"source": str(source)}, extras={})


def test_rows_name_the_env_class_and_task(source: Path) -> None:
    rows = adapter.skyrl_rows(str(source))
    assert [r["task_id"] for r in rows] == ["cpu-add"]
    assert rows[0]["env_class"] == "cudaenv" and rows[0]["extra_info"]["task_id"] == "cpu-add"
    assert adapter.register() == "cudaenv"  # idempotent


@pytest.mark.slow
def test_32_concurrent_episodes_leave_no_sandbox_or_process(source: Path) -> None:
    with ScriptedServer([text(NOP)]) as srv:
        asyncio.run(_rollout(source, srv.base_url))  # warm-up: helpers the process keeps
    dirs, procs = sandbox_dirs(), descendants()
    scripts = {True: ORACLE, False: NOP}
    servers = {k: ScriptedServer([text(v)]).start() for k, v in scripts.items()}
    try:

        async def main() -> list[tuple[list[dict], dict]]:
            return await asyncio.gather(
                *(_rollout(source, servers[i % 2 == 0].base_url) for i in range(32))
            )

        results = asyncio.run(main())
    finally:
        for srv in servers.values():
            srv.stop()
    rewards = [outs[-1]["reward"] for outs, _ in results]
    assert rewards == [1.0 if i % 2 == 0 else 0.0 for i in range(32)]
    assert all(outs[-1]["metadata"]["reward_valid"] for outs, _ in results)
    assert sandbox_dirs() <= dirs
    assert descendants() <= procs
