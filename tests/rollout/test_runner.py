"""Rollouts: streaming, the store, resume, failure classes, Ctrl-C, batched and async APIs, Ray."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from cudaenv.agents.oracle import OracleAgent
from cudaenv.errors import AgentError, SandboxError
from cudaenv.problems import load_suite
from cudaenv.rollout import (
    EpisodeResult,
    ResultStore,
    arun_episodes,
    latest_results,
    run_episodes,
)
from tests.conftest import CPU_SOLUTION

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def keys(out: Path, name: str = "results") -> list[str]:
    return [r["key"] for r in ResultStore(out, name).records()]


class FailingAgent:
    name = "failing"

    def run(self, env, *, seed=None):
        env.reset(seed=seed)
        raise AgentError("the model endpoint is gone")


class SelfKillingAgent:
    """Kills its own worker process on the first attempt it sees (a marker file remembers),
    then behaves like the oracle; with ``always`` it kills every time."""

    name = "self-killing"

    def __init__(self, marker: str, always: bool = False) -> None:
        self.marker, self.always = marker, always

    def run(self, env, *, seed=None):
        if self.always or not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return OracleAgent().run(env, seed=seed)


def _broken_sandbox():
    raise SandboxError("no sandbox today")


def test_in_process_streams_and_stores(cpu_problem, tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen = []
    for res in run_episodes("oracle", [cpu_problem], attempts=3, workers=2, out_dir=out):
        assert isinstance(res, EpisodeResult)
        assert res.key in keys(out)  # stored before it was yielded
        seen.append(res)
    assert sorted(r.key for r in seen) == ["cpu-add#0", "cpu-add#1", "cpu-add#2"]
    assert all(
        r.status == "ok" and r.reward == 1.0 and r.passed and r.group == "cuda-kernels"
        for r in seen
    )
    assert all(
        r.trajectory is not None and r.trajectory_path == str(out / "trajectories.jsonl")
        for r in seen
    )
    stored = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {s["key"] for s in stored} == {r.key for r in seen} and "trajectory" not in stored[0]
    trajs = list(ResultStore(out, "trajectories").records())
    assert {t["key"] for t in trajs} == {r.key for r in seen}
    assert trajs[0]["trajectory"]["steps"][-1]["tool"] == "submit"


def test_resume_skips_done_keys(cpu_problem, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert len(list(run_episodes("nop", [cpu_problem], attempts=2, out_dir=out))) == 2
    again = list(run_episodes("nop", [cpu_problem], attempts=3, out_dir=out))
    assert [r.key for r in again] == ["cpu-add#2"]
    assert list(run_episodes("nop", [cpu_problem], attempts=3, out_dir=out)) == []
    assert sorted(keys(out)) == ["cpu-add#0", "cpu-add#1", "cpu-add#2"]


def test_failure_classes(cpu_problem, tmp_path: Path) -> None:
    [res] = run_episodes(FailingAgent, [cpu_problem])
    assert res.status == "agent_error" and "endpoint is gone" in res.error and res.reward == 0.0
    out = tmp_path / "run"
    [res] = run_episodes(
        "oracle", [cpu_problem], out_dir=out, env_options={"sandbox": _broken_sandbox}
    )
    assert res.status == "infrastructure" and "no sandbox today" in res.error and not res.passed
    # a rerun retries infrastructure failures; the latest record of a key wins
    [res] = run_episodes("oracle", [cpu_problem], out_dir=out)
    assert res.status == "ok" and latest_results(ResultStore(out))["cpu-add#0"]["status"] == "ok"


def test_infrastructure_verdict_is_infrastructure(cpu_problem) -> None:
    calls = {"n": 0}

    def flaky():  # the agent's sandbox works; the grading sandbox does not
        from cudaenv.sandbox import make_sandbox

        calls["n"] += 1
        if calls["n"] > 1:
            raise SandboxError("grading host lost")
        return make_sandbox("local")

    [res] = run_episodes("oracle", [cpu_problem], env_options={"sandbox": flaky})
    assert res.status == "infrastructure"
    assert res.verdict is not None and res.verdict.failure == "infrastructure"


def test_keyboard_interrupt_keeps_stored_results(cpu_problem, tmp_path: Path) -> None:
    out = tmp_path / "run"
    got = []
    with pytest.raises(KeyboardInterrupt):
        for res in run_episodes("nop", [cpu_problem], attempts=4, workers=1, out_dir=out):
            got.append(res.key)
            raise KeyboardInterrupt
    assert got == ["cpu-add#0"]
    stored = set(keys(out))
    assert "cpu-add#0" in stored and len(stored) < 4
    rest = [r.key for r in run_episodes("nop", [cpu_problem], attempts=4, out_dir=out)]
    assert sorted(stored | set(rest)) == [f"cpu-add#{i}" for i in range(4)] and not stored & set(
        rest
    )


def test_bad_spec_fails_fast(cpu_problem) -> None:
    from cudaenv.errors import SpecError

    with pytest.raises(SpecError):
        run_episodes("no-such-agent", [cpu_problem])
    with pytest.raises(ValueError):
        run_episodes("nop", [cpu_problem], attempts=0)


def test_async_variant(cpu_problem) -> None:
    async def main() -> list[EpisodeResult]:
        return [r async for r in arun_episodes("nop", [cpu_problem], attempts=2, workers=2)]

    results = asyncio.run(main())
    assert sorted(r.key for r in results) == ["cpu-add#0", "cpu-add#1"]


def test_rl_loop_example_against_scripted_server(cpu_problem) -> None:
    from tests.agents.scripted_server import ScriptedServer, tool_call

    spec = importlib.util.spec_from_file_location(
        "rl_loop_example", ROOT / "examples" / "rl_loop.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    script = [
        tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION),
        tool_call("submit"),
        tool_call("submit"),
    ]
    with ScriptedServer(script) as srv:
        groups = mod.collect_groups(
            [cpu_problem],
            group_size=2,
            model="scripted",
            base_url=srv.base_url,
            workers=1,
            max_turns=4,
        )
    [group] = groups
    assert sorted(s.reward for s in group.samples) == [0.0, 1.0]
    adv = {s.reward: a for s, a in zip(group.samples, group.advantages(), strict=True)}
    assert adv[1.0] > 0 > adv[0.0] and abs(sum(group.advantages())) < 1e-6
    assert group.samples[0].prompt[0]["role"] == "system" and group.samples[0].actions


# ----------------------------------------------------------------------------- Ray

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_session():
    from cudaenv.rollout.ray_pool import init_ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    init_ray(num_cpus=2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_two_workers_stream_store_and_resume(ray_session, cpu_problem, tmp_path: Path) -> None:
    out = tmp_path / "run"
    results = list(
        run_episodes("oracle", [cpu_problem], attempts=3, workers=2, use_ray=True, out_dir=out)
    )
    assert sorted(r.key for r in results) == ["cpu-add#0", "cpu-add#1", "cpu-add#2"]
    assert all(r.status == "ok" and r.reward == 1.0 for r in results)
    assert len({r.worker for r in results}) >= 1 and all(
        r.worker.startswith("worker-") for r in results
    )
    assert (
        sorted(keys(out))
        == sorted(keys(out, "trajectories"))
        == [r.key for r in sorted(results, key=lambda r: r.key)]
    )
    assert (
        list(
            run_episodes("oracle", [cpu_problem], attempts=3, workers=2, use_ray=True, out_dir=out)
        )
        == []
    )


@pytest.mark.slow
def test_ray_dead_worker_is_replaced_and_episode_retried(
    ray_session, cpu_problem, tmp_path: Path
) -> None:
    marker = tmp_path / "killed-once"
    [res] = run_episodes(
        lambda: SelfKillingAgent(str(marker)), [cpu_problem], workers=1, use_ray=True
    )
    assert marker.exists() and res.status == "ok" and res.reward == 1.0
    assert res.worker.split(":")[1] != marker.read_text()  # a fresh process ran it
    [res] = run_episodes(
        lambda: SelfKillingAgent(str(marker), always=True),
        [cpu_problem],
        use_ray=True,
        max_retries=1,
    )
    assert res.status == "infrastructure" and "worker died 2 times" in res.error
