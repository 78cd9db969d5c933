"""areset/astep: many concurrent episodes in one event loop, nothing left behind."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
import weakref
from pathlib import Path

import pytest

import cudaenv
from cudaenv.env import aio
from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION, descendants, sandbox_dirs


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


async def _episode(problem, oracle: bool) -> tuple[float, dict]:
    env = cudaenv.make(problem)
    try:
        await env.areset(seed=0)
        if oracle:
            await env.astep(
                {"tool": "write_file", "args": {"path": "solution.cpp", "content": CPU_SOLUTION}}
            )
        _, reward, term, _, info = await env.astep({"tool": "submit"})
        assert term
        return reward, info
    finally:
        env.close()


def test_64_concurrent_episodes_leave_no_sandbox_or_process(cpu_problem) -> None:
    asyncio.run(_episode(cpu_problem, oracle=False))  # warm-up: helpers the process keeps
    dirs, procs = sandbox_dirs(), descendants()
    probe = cudaenv.make(cpu_problem)
    probe.reset()
    probe.step({"tool": "bash", "args": {"command": "true"}})
    assert sandbox_dirs() - dirs and descendants() - procs  # the counts see a live episode
    probe.close()

    async def main() -> list[tuple[float, dict]]:
        return await asyncio.gather(*(_episode(cpu_problem, oracle=i % 2 == 0) for i in range(64)))

    results = asyncio.run(main())
    assert [r for r, _ in results] == [1.0 if i % 2 == 0 else 0.0 for i in range(64)]
    assert all(info["reward_valid"] for _, info in results)
    assert sum(info["is_success"] for _, info in results) == 32
    assert sandbox_dirs() <= dirs
    assert descendants() <= procs


def test_one_call_at_a_time_per_env_and_cancel_closes(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)

    async def main() -> None:
        await env.areset()
        first = asyncio.ensure_future(
            env.astep({"tool": "bash", "args": {"command": "sleep 30", "timeout": 1}})
        )
        await asyncio.sleep(0)  # the first call has claimed the env
        with pytest.raises(CudaEnvError, match="already running"):
            await env.astep({"tool": "list_files"})
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first

    asyncio.run(main())
    deadline = time.monotonic() + 60  # hang guard only: the bash call ends at its 1 s timeout
    while env._sandbox is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert env._sandbox is None  # closed once the cancelled step returned
    with pytest.raises(CudaEnvError, match="episode is over"):
        env.step({"tool": "list_files"})


def test_async_pool_bound_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(aio.ENV_VAR, "7")
    assert aio.async_threads() == 7
    monkeypatch.delenv(aio.ENV_VAR)
    assert aio.async_threads() == aio.default_threads()
    for bad in ("0", "many", "-3"):
        monkeypatch.setenv(aio.ENV_VAR, bad)
        with pytest.raises(SpecError, match=aio.ENV_VAR):
            aio.async_threads()


def test_pool_is_bounded_and_daemon() -> None:
    pool = aio.DaemonExecutor(2)
    gate, lock, running = threading.Event(), threading.Lock(), [0]

    def call(i: int) -> int:
        with lock:
            running[0] += 1
        gate.wait(60)  # hang guard only: the test opens the gate
        return i * i

    futures = [pool.submit(call, i) for i in range(5)]
    deadline = time.monotonic() + 60
    while running[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running[0] == 2 and pool.threads == 2  # the other three wait for a thread
    names = [t for t in threading.enumerate() if t.name.startswith("cudaenv-async_")]
    assert names and all(t.daemon for t in names)
    gate.set()
    assert [f.result(timeout=60) for f in futures] == [0, 1, 4, 9, 16]
    assert pool.threads == 2


def test_default_bound_follows_the_cpus() -> None:
    assert [aio.default_threads(c) for c in (1, 2, 3, 8, 32, 64)] == [4, 4, 6, 16, 64, 64]
    assert aio.MIN_DEFAULT_THREADS <= aio.default_threads() <= aio.MAX_DEFAULT_THREADS


def test_a_free_thread_takes_the_lowest_rank_first() -> None:
    pool = aio.DaemonExecutor(1)
    gate, started, order = threading.Event(), threading.Event(), []

    def block() -> None:
        started.set()
        gate.wait(60)  # hang guard only: the test opens the gate

    first = pool.submit_ranked(-9, block)
    assert started.wait(60)
    futures = [pool.submit_ranked(r, order.append, (r, i)) for i, r in enumerate([-1, -5, -1, -3])]
    futures.append(pool.submit(order.append, ("unranked", 4)))  # tickets count up from 0
    gate.set()
    for f in (first, *futures):
        f.result(timeout=60)
    assert order == [(-5, 1), (-3, 3), (-1, 0), (-1, 2), ("unranked", 4)]


def test_an_episode_keeps_its_ticket_until_the_next_reset() -> None:
    old, new = aio.Offloader(lambda: None), aio.Offloader(lambda: None)
    asyncio.run(old.begin(int))
    asyncio.run(new.begin(int))
    first = old._ticket
    assert first is not None and new._ticket is not None and first < new._ticket
    assert asyncio.run(old.run(str, 7)) == "7"
    assert old._ticket == first  # its steps go before the newer episode's
    asyncio.run(old.begin(int))
    assert old._ticket > new._ticket  # a new episode queues behind the running ones


def test_an_episode_runs_when_fds_are_above_1024(cpu_problem) -> None:
    """Hundreds of open sandboxes push fd numbers past select()'s 1024 limit: still works."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 1400:
        pytest.skip(f"RLIMIT_NOFILE {soft} is too low to hold 1100 descriptors")
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(held) > 1024
        env = cudaenv.make(cpu_problem)
        asyncio.run(env.areset())
        obs, *_ = asyncio.run(env.astep({"tool": "bash", "args": {"command": "echo high"}}))
        assert "exit code: 0" in obs and "high" in obs
        env.close()
    finally:
        for fd in held:
            os.close(fd)


def test_a_finished_async_episode_is_freed_without_the_cycle_collector(cpu_problem) -> None:
    """No reference cycle through the env's offloader: a finished episode (trajectory,
    verdict, steps) is freed when its last reference goes, not at a collector pass (a full
    pass stops the event loop for tens of ms)."""

    async def one() -> weakref.ref:
        env = cudaenv.make(cpu_problem)
        await env.areset(seed=0)
        await env.astep({"tool": "bash", "args": {"command": "true"}})
        await env.astep({"tool": "submit"})
        env.close()
        return weakref.ref(env)

    gc.collect()
    gc.disable()
    try:
        ref = asyncio.run(one())
        deadline = time.monotonic() + 30  # the pool thread drops its call just after the result
        while ref() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ref() is None
    finally:
        gc.enable()
