"""verifiers v1 adapter, with the real verifiers: rollouts driven through verifiers' own
API (``env.serving()`` + ``env.run_slot``, as ``vf-eval`` runs them), the model a scripted
OpenAI-compatible server reached through verifiers' interception endpoint."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from cudaenv.errors import SandboxError  # noqa: E402
from cudaenv.integrations.verifiers import load_environment  # noqa: E402
from tests.agents.scripted_server import ScriptedServer, tool_call, tool_calls  # noqa: E402
from tests.conftest import (  # noqa: E402
    CPU_SOLUTION,
    descendants,
    sandbox_dirs,
)

ROOT = Path(__file__).resolve().parents[2]
ORACLE = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), tool_call("submit")]
NOP = [tool_call("submit")]
#: one reply with both calls: every rollout gets the same reply, in any order
ORACLE_REPLY = tool_calls(
    ("write_file", {"path": "solution.cpp", "content": CPU_SOLUTION}), ("submit", {})
)


@pytest.fixture
def source(cpu_problem_dir: Path) -> str:
    return str(cpu_problem_dir.parent)


def _ctx(srv: ScriptedServer) -> Any:
    return vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=srv.base_url))


async def _episodes(env: Any, ctxs: list[Any]) -> list[Any]:
    """One episode per model context, concurrently, inside one ``serving()``."""
    (task,) = list(env.taskset)
    async with env.serving():
        slots = [slot for _ in ctxs for slot in env.slots(task, 1)]
        return await asyncio.gather(*(env.run_slot(s, c) for s, c in zip(slots, ctxs, strict=True)))


def _one(env: Any, srv: ScriptedServer) -> Any:
    (episode,) = asyncio.run(_episodes(env, [_ctx(srv)]))
    (trace,) = episode.traces
    return episode, trace


def test_taskset_rows_are_the_problems(source: str) -> None:
    env = load_environment(source, mode="solve")
    (task,) = list(env.taskset)
    assert task.data.task_id == "cpu-add" and task.data.mode == "solve"
    assert task.data.source == source and "cpu-add" in task.key
    with pytest.raises(KeyError, match="did you mean cpu-add"):
        list(load_environment(source, ids=["cpu-ad"]).taskset)
    with pytest.raises(ValueError, match=r"unknown env option.*sandbx"):
        load_environment(source, sandbx="local")


def test_oracle_scores_1_and_nop_0(source: str) -> None:
    with ScriptedServer(ORACLE) as srv:
        episode, trace = _one(load_environment(source), srv)
        sent = srv.requests
    assert episode.ok and trace.ok and trace.last_error is None
    assert trace.reward == 1.0 and trace.metrics["is_success"] == 1.0
    assert len(sent) == 2 and {t["function"]["name"] for t in sent[0]["tools"]} >= {
        "bash",
        "write_file",
        "submit",
    }
    with ScriptedServer(NOP) as srv:
        episode, trace = _one(load_environment(source), srv)
    assert episode.ok and trace.reward == 0.0 and trace.metrics["is_success"] == 0.0


def test_episodes_in_worker_processes_score_the_same(source: str) -> None:
    with ScriptedServer(ORACLE) as srv:
        episode, trace = _one(load_environment(source, processes=True), srv)
    assert episode.ok and trace.reward == 1.0 and trace.metrics["is_success"] == 1.0
    with ScriptedServer(NOP) as srv:
        episode, trace = _one(load_environment(source, processes=True), srv)
    assert episode.ok and trace.reward == 0.0
    with pytest.raises(ValueError, match="sandbox"):  # a factory that cannot go to a worker
        load_environment(source, processes=True, sandbox=lambda: None)


def test_a_dead_worker_raises_the_infrastructure_error(source: str) -> None:
    from cudaenv.env import workers

    script = [tool_call("bash", command="sleep 60", timeout=90)]
    with ScriptedServer(script) as srv:

        async def main() -> Any:
            run = asyncio.ensure_future(
                _episodes(load_environment(source, processes=True), [_ctx(srv)])
            )
            deadline = time.monotonic() + 120  # hang guard only
            while len(srv.requests) < 1 or not workers.worker_pool().workers:
                assert time.monotonic() < deadline and not run.done()
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the bash call is running in the worker
            for w in workers.worker_pool().workers:
                if w.pid is not None:
                    os.kill(w.pid, 9)
            return await asyncio.wait_for(run, 120)  # hang guard only

        (episode,) = asyncio.run(main())
    (trace,) = episode.traces
    assert not episode.ok and trace.last_error.type == "SandboxError"
    assert "worker" in trace.last_error.message and trace.rewards == {}


def test_malformed_tool_arguments_get_an_error_observation(source: str) -> None:
    script = [
        tool_call("write_file", raw_arguments='{"path": "solution.cpp", "content": '),
        *ORACLE,
    ]
    with ScriptedServer(script) as srv:
        _, trace = _one(load_environment(source), srv)
        second = srv.requests[1]["messages"]
    tool_msg = second[-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"].startswith("error:")
    assert "JSON" in tool_msg["content"]
    assert trace.reward == 1.0  # the episode went on and was solved


def test_a_verifiers_turn_cap_grades_the_workspace_as_it_stands(source: str) -> None:
    script = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION)]
    with ScriptedServer(script, default=tool_call("list_files")) as srv:
        episode, trace = _one(load_environment(source, max_turns=1), srv)
        assert len(srv.responses) == 1  # the second turn was refused by verifiers
    assert trace.stop_condition == "max_turns"
    assert episode.ok and trace.reward == 1.0  # graded: the oracle file was written


def test_broken_sandbox_factory_raises_the_infrastructure_error(source: str) -> None:
    def broken():
        raise SandboxError("scripted: no sandbox today")

    with ScriptedServer(ORACLE) as srv:
        episode, trace = _one(load_environment(source, sandbox=broken), srv)
        assert srv.requests == []  # the model was never asked
    assert not episode.ok and not trace.ok
    assert trace.last_error.type == "SandboxError"
    assert "no sandbox today" in trace.last_error.message
    assert trace.rewards == {}  # not scored: masked, never a 0


def test_grading_infrastructure_fault_is_not_scored(source: str) -> None:
    def grading_box():
        raise SandboxError("scripted: grading host down")

    with ScriptedServer(ORACLE) as srv:
        episode, trace = _one(load_environment(source, grading_sandbox=grading_box), srv)
    assert not episode.ok and trace.last_error.type == "SandboxError"
    assert "infrastructure" in trace.last_error.message and trace.rewards == {}


def test_cancelled_rollout_closes_its_sandbox(source: str) -> None:
    env = load_environment(source)
    before = sandbox_dirs()
    script = [tool_call("bash", command="sleep 30", timeout=2)]
    with ScriptedServer(script) as srv:

        async def main() -> None:
            run = asyncio.ensure_future(_episodes(env, [_ctx(srv)]))
            deadline = time.monotonic() + 120  # hang guard only
            while not (srv.requests and sandbox_dirs() - before):
                assert time.monotonic() < deadline and not run.done()
                await asyncio.sleep(0.05)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run

        asyncio.run(main())
    deadline = time.monotonic() + 60  # hang guard only: the bash call ends at its 2 s timeout
    while sandbox_dirs() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sandbox_dirs() - before


@pytest.mark.slow
def test_32_concurrent_rollouts_leave_no_sandbox_or_process(source: str) -> None:
    env = load_environment(source)
    with ScriptedServer(NOP) as srv:
        _one(env, srv)  # warm-up: helpers the process keeps
    dirs, procs = sandbox_dirs(), descendants()
    with ScriptedServer([ORACLE_REPLY]) as good, ScriptedServer(NOP) as bad:
        ctxs = [_ctx(good if i % 2 == 0 else bad) for i in range(32)]
        episodes = asyncio.run(_episodes(env, ctxs))
    rewards = [ep.traces[0].reward for ep in episodes]
    assert all(ep.ok for ep in episodes)
    assert sorted(rewards) == [0.0] * 16 + [1.0] * 16
    assert sandbox_dirs() <= dirs
    assert descendants() <= procs


def test_the_package_is_the_plugin_verifiers_resolves() -> None:
    """``vf-eval cudaenv`` imports the package ``cudaenv`` and takes the one Taskset, Harness
    and Env subclass its ``__all__`` exports (verifiers' own resolver, as vf-eval calls it)."""
    from verifiers.v1.utils import loaders

    from cudaenv.integrations.verifiers import CudaHarness, CudaTaskset, CudaVfEnv

    assert loaders.taskset_class("cudaenv") is CudaTaskset
    assert loaders.default_harness_id("cudaenv") == "cudaenv"
    assert loaders.harness_class("cudaenv") is CudaHarness
    assert loaders.environment_class("cudaenv") is CudaVfEnv


@pytest.mark.slow
def test_vf_eval_cli_runs_the_plugin_with_processes(source: str, tmp_path: Path) -> None:
    """``vf-eval cudaenv`` with the episodes in worker processes, harness options after the
    harness id (the plain command, from the wheel: ``test_verifiers_wheel.py``)."""
    flags = ["--env.agent.harness.id", "cudaenv", "--env.agent.harness.processes", "true"]
    vf_eval = Path(sys.executable).with_name("vf-eval")
    if not vf_eval.exists():
        pytest.skip("vf-eval is not on this interpreter's bin dir")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    with ScriptedServer(ORACLE) as srv:
        cmd = [str(vf_eval), "cudaenv", "--env.taskset.source", source, "--model", "scripted"]
        cmd += ["--client.base-url", srv.base_url, "-n", "1", "-r", "1", "--no-push"]
        cmd += ["--output-dir", str(tmp_path / "out"), *flags]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (traces,) = (tmp_path / "out").glob("*/traces.jsonl")
    (episode,) = [json.loads(line) for line in traces.read_text().splitlines()]
    assert episode["ok"] and episode["traces"][0]["rewards"]["cudaenv_reward"]["score"] == 1.0
