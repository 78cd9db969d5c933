"""ProcessEnv: the env in a worker process, mirrored in the loop's; nothing left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import cudaenv
from cudaenv.env import workers
from cudaenv.env.process_env import ProcessEnv
from cudaenv.errors import CudaEnvError, ProblemNotFoundError, SpecError, WorkerError
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION, comparable_trajectory, descendants

WRITE = {"tool": "write_file", "args": {"path": "solution.cpp", "content": CPU_SOLUTION}}
SANDBOXES = Path(tempfile.gettempdir()).resolve() / "cudaenv-sandboxes"


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def sandboxes_of(pids: set[int]) -> set[str]:
    """Local sandbox directories owned by these processes."""
    if not SANDBOXES.is_dir():
        return set()
    return {p.name for p in SANDBOXES.iterdir() if p.name.split("-", 1)[0] in map(str, pids)}


def worker_pids() -> set[int]:
    return {w.pid for w in workers.worker_pool().workers if w.pid is not None}


async def _episode(problem, oracle: bool) -> tuple[float, dict]:
    env = ProcessEnv(problem)
    try:
        await env.areset(seed=0)
        if oracle:
            await env.astep(WRITE)
        _, reward, term, _, info = await env.astep({"tool": "submit"})
        assert term
        return reward, info
    finally:
        await env.aclose()


def test_32_concurrent_episodes_grade_and_leave_nothing(cpu_problem) -> None:
    asyncio.run(_episode(cpu_problem, oracle=False))  # warm-up: a worker started
    procs = descendants()

    async def main() -> list[tuple[float, dict]]:
        return await asyncio.gather(*(_episode(cpu_problem, oracle=i % 2 == 0) for i in range(32)))

    results = asyncio.run(main())
    assert [r for r, _ in results] == [1.0 if i % 2 == 0 else 0.0 for i in range(32)]
    assert all(info["reward_valid"] for _, info in results)
    assert sum(info["is_success"] for _, info in results) == 16
    pids = worker_pids()
    assert pids and not sandboxes_of(pids)  # every episode's sandboxes closed in its worker
    assert descendants() - procs <= pids  # the workers themselves, nothing under them


def test_it_mirrors_the_env_call_for_call(cpu_problem) -> None:
    """Same replies, same results, messages and trajectory as a CudaEnv in-process, in step."""
    replies = [
        {"tool": "bash", "args": {"command": "echo hi"}},
        "no call at all",
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>',
        {"tool": "bash", "args": "{oops"},
        WRITE,
        {"tool": "submit"},
    ]
    local = cudaenv.make(cpu_problem)

    async def main() -> tuple[ProcessEnv, dict]:
        env = ProcessEnv(cpu_problem)
        assert await env.areset(seed=3) == local.reset(seed=3)
        assert env.instruction == local.instruction and env.problem == local.problem
        info: dict = {}
        for r in replies:
            want = local.step(r)
            *got, info = await env.astep(r)
            assert got == list(want[:4])
            assert env.messages == local.messages
            assert [s.tool for s in env.trajectory.steps] == [
                s.tool for s in local.trajectory.steps
            ]
        await env.aclose()
        return env, info

    env, info = asyncio.run(main())
    assert env.trajectory is info["trajectory"]  # the final record is the info's
    assert comparable_trajectory(env.trajectory) == comparable_trajectory(local.trajectory)
    assert env.trajectory.reward == 1.0
    local.close()


def test_errors_come_back_as_the_env_raises_them(cpu_problem, cpu_problem_dir: Path) -> None:
    async def main() -> None:
        env = ProcessEnv(cpu_problem, source=str(cpu_problem_dir.parent))
        with pytest.raises(CudaEnvError, match="areset"):
            await env.astep({"tool": "list_files"})
        await env.areset()
        with pytest.raises(ProblemNotFoundError, match="cpu-add"):  # close matches named
            await env.areset(options={"task_id": "cpu-ad"})
        with pytest.raises(SpecError, match="unknown reset option"):
            await env.areset(options={"colour": "red"})
        obs, *_ = await env.astep({"tool": "list_files"})  # the episode survived the refusals
        assert "solution.cpp" in obs or "include" in obs
        await env.astep({"tool": "submit"})
        with pytest.raises(CudaEnvError, match="episode is over"):
            await env.astep({"tool": "list_files"})
        with pytest.raises(CudaEnvError, match="worker process"):
            env.sandbox  # noqa: B018
        await env.aclose()
        unknown = ProcessEnv("cpu-ad", source=str(cpu_problem_dir.parent))
        for _ in range(2):  # the worker could not build it: still the same error, not another
            with pytest.raises(ProblemNotFoundError, match="cpu-add"):
                await unknown.areset()
        unknown.close()

    asyncio.run(main())


def _no_pickle_factory():  # pragma: no cover - never called: it is refused first
    raise AssertionError


def test_options_that_cannot_go_to_a_worker_are_named(cpu_problem) -> None:
    with pytest.raises(SpecError, match="sandbox") as err:
        ProcessEnv(cpu_problem, sandbox=lambda: None)
    assert err.value.field == "sandbox"
    with pytest.raises(SpecError, match="reward"):
        ProcessEnv(cpu_problem, reward=lambda verdict: 1.0)


def test_a_killed_worker_fails_its_episode_as_infrastructure(cpu_problem) -> None:
    async def main() -> None:
        env = ProcessEnv(cpu_problem)
        await env.areset()
        assert env._worker is not None and env._worker.pid is not None
        pid = env._worker.pid
        step = asyncio.ensure_future(
            env.astep({"tool": "bash", "args": {"command": "sleep 60", "timeout": 90}})
        )
        await asyncio.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerError, match=f"worker process {pid}"):
            await asyncio.wait_for(step, 60)  # hang guard only: it fails as soon as the pipe ends
        with pytest.raises(WorkerError, match="gone"):
            await env.astep({"tool": "list_files"})
        obs, _ = await env.areset()  # a new episode opens in a live worker
        assert env._worker.pid != pid and "cpu-add" in obs
        _, reward, *_ = await env.astep({"tool": "submit"})
        assert reward == 0.0
        await env.aclose()

    asyncio.run(main())


def test_a_cancelled_step_closes_the_env_in_its_worker(cpu_problem) -> None:
    async def main() -> set[int]:
        env = ProcessEnv(cpu_problem)
        await env.areset()
        pids = worker_pids()
        assert sandboxes_of(pids)
        step = asyncio.ensure_future(
            env.astep({"tool": "bash", "args": {"command": "sleep 30", "timeout": 1}})
        )
        await asyncio.sleep(0.2)
        step.cancel()
        with pytest.raises(asyncio.CancelledError):
            await step
        with pytest.raises(CudaEnvError, match="areset"):
            await env.astep({"tool": "list_files"})
        return pids

    pids = asyncio.run(main())
    deadline = time.monotonic() + 60  # hang guard only: the bash call ends at its 1 s timeout
    while sandboxes_of(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sandboxes_of(pids)


def test_the_worker_dies_with_its_owner_and_cleans_up(cpu_problem_dir: Path) -> None:
    """An owner killed with SIGKILL cannot close anything: its worker must (no sandbox, no
    process outlives the trainer)."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from cudaenv.env.process_env import ProcessEnv
        from cudaenv.problems import load_suite
        async def main():
            env = ProcessEnv(load_suite({str(cpu_problem_dir.parent)!r})["cpu-add"])
            await env.areset()
            await env.astep({{"tool": "bash", "args": {{"command": "sleep 300 &"}}}})
            print(env._worker.pid, flush=True)
            await asyncio.sleep(300)
        asyncio.run(main())
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        assert owner.stdout is not None
        worker = int(owner.stdout.readline())
        assert sandboxes_of({worker})
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 60  # hang guard only
    while (
        sandboxes_of({worker}) or Path(f"/proc/{worker}").exists()
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{worker}").exists()
    assert not sandboxes_of({worker})


def test_pool_size_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(workers.ENV_VAR, "3")
    assert workers.process_workers() == 3
    monkeypatch.delenv(workers.ENV_VAR)
    assert workers.MIN_DEFAULT_WORKERS <= workers.process_workers() <= workers.MAX_DEFAULT_WORKERS
    for bad in ("0", "lots"):
        monkeypatch.setenv(workers.ENV_VAR, bad)
        with pytest.raises(SpecError, match=workers.ENV_VAR):
            workers.process_workers()


def test_an_episode_goes_to_the_least_loaded_worker() -> None:
    pool = workers.WorkerPool(2, 1)
    try:
        a, b = pool.place(), pool.place()
        assert a is not b
        a.drop(0, 0)
        assert pool.place() is a  # a holds none now, b one
        assert {a.envs, b.envs} == {1}
    finally:
        pool.shutdown()


def test_a_drop_that_overtakes_the_first_call_leaves_no_env(cpu_problem) -> None:
    """A cancelled first call: its drop may run on another worker thread before the call
    built the env; the env is then closed as soon as it is built, never kept."""
    import pickle
    import socket
    from multiprocessing.connection import Connection

    from cudaenv.env.worker_main import _Server

    ours, theirs = socket.socketpair()
    server, owner = _Server(Connection(theirs.detach()), 1), Connection(ours.detach())
    ctor = pickle.dumps((pickle.dumps(cpu_problem), {}))
    before = sandboxes_of({os.getpid()})
    server.drop(7)
    server.call(0, 7, "reset", pickle.dumps((ctor, (), {})))
    call_id, data = owner.recv()
    ok, err, state = pickle.loads(data)
    assert call_id == 0 and not ok and "closed while" in str(err) and state is None
    assert server.envs == {} and server.dropped == set()
    assert sandboxes_of({os.getpid()}) <= before
    server.call(1, 8, "reset", pickle.dumps((ctor, (), {})))  # no drop: it is built and kept
    ok, (_obs, info), state = pickle.loads(owner.recv()[1])
    assert ok and info["task_id"] == "cpu-add" and state.messages and 8 in server.envs
    server.drop(8)
    assert server.envs == {} and sandboxes_of({os.getpid()}) <= before
