"""ProcessEnv under faults injected from outside, with real processes and signals.

A stopped (SIGSTOP) worker is killed and its step fails with WorkerError instead of hanging;
so is one that stops answering; a call past its deadline fails the same way; a stopped
worker dies with its owner, whether the owner exits or is SIGKILLed, and still closes its
sandboxes; a reset right after the idle worker was SIGKILLed opens the episode in a live
one; bad reset options and unpicklable arguments are ``cudaenv`` errors naming the argument.
Every wait below is a hang guard, never a timing assertion.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import cudaenv
from cudaenv.env import worker_watch, workers
from cudaenv.env.process_env import ProcessEnv, default_deadline
from cudaenv.errors import SpecError, WorkerError
from cudaenv.problems import load_suite
from tests.env.test_process_env import sandboxes_of

HANG_GUARD_S = 60


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def gone(pid: int) -> bool:
    """No such process, or only its zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except OSError:
        return True


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + HANG_GUARD_S
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)


def test_a_stopped_worker_is_killed_and_its_step_fails(cpu_problem) -> None:
    async def main() -> None:
        env = ProcessEnv(cpu_problem)
        await env.areset()
        pid = env._worker.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(WorkerError, match=f"worker process {pid} was stopped"):
                await asyncio.wait_for(env.astep({"tool": "list_files"}), HANG_GUARD_S)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert wait_gone(pid)
        obs, _ = await env.areset()  # the next episode opens in a live worker
        assert env._worker.pid != pid and "cpu-add" in obs
        await env.aclose()

    asyncio.run(main())


def test_a_call_past_its_deadline_fails_and_the_env_goes_on(cpu_problem) -> None:
    assert default_deadline("step", cpu_problem) > default_deadline("submit", cpu_problem) > 0

    async def main() -> None:
        env = ProcessEnv(cpu_problem)
        await env.areset()
        env.call_timeout_s = 1  # the step's deadline (a new worker's reset may take longer)
        sleep = {"tool": "bash", "args": {"command": "sleep 5", "timeout": 60}}
        with pytest.raises(WorkerError, match="did not finish within 1 s"):
            await asyncio.wait_for(env.astep(sleep), HANG_GUARD_S)
        env.call_timeout_s = None
        obs, _ = await env.areset()
        assert "cpu-add" in obs
        await env.aclose()

    asyncio.run(main())


def test_a_worker_that_never_answers_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A live process that reads nothing (a wedged worker): its pings go unanswered."""
    monkeypatch.setattr(workers, "_BOOT", "import time\ntime.sleep(120)\n")
    monkeypatch.setattr(worker_watch, "UNRESPONSIVE_S", 1.0)
    pool = workers.WorkerPool(1, 1)
    worker = pool.place()

    async def main() -> None:
        fut = worker.call(0, 0, "reset", b"never read")
        with pytest.raises(WorkerError, match="did not answer a ping"):
            ok, value, _ = await asyncio.wait_for(fut, HANG_GUARD_S)
            assert not ok
            raise value

    try:
        asyncio.run(main())
        assert worker.pid is not None and wait_gone(worker.pid)
    finally:
        if worker.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
        pool.shutdown()


OWNER = """
import asyncio, os, signal, sys
from cudaenv.env.process_env import ProcessEnv
from cudaenv.problems import load_suite
async def main():
    env = ProcessEnv(load_suite({suite!r})["cpu-add"])
    await env.areset()
    pid = env._worker.pid
    os.kill(pid, signal.SIGSTOP)
    print(pid, flush=True)
    if {exit_now!r}:
        sys.exit(0)
    await asyncio.sleep(300)
asyncio.run(main())
"""


@pytest.mark.parametrize("how", ["exits", "is SIGKILLed"])
def test_a_stopped_worker_dies_with_its_owner_and_cleans_up(
    cpu_problem_dir: Path, how: str
) -> None:
    script = textwrap.dedent(
        OWNER.format(suite=str(cpu_problem_dir.parent), exit_now=how == "exits")
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker = 0
    try:
        assert owner.stdout is not None
        worker = int(owner.stdout.readline())
        assert sandboxes_of({worker})
        if how == "is SIGKILLed":
            owner.kill()  # at once: well within the owner's own stopped-worker grace
        owner.wait(timeout=HANG_GUARD_S)
        assert wait_gone(worker), f"worker {worker} outlived its owner"
        deadline = time.monotonic() + HANG_GUARD_S
        while sandboxes_of({worker}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not sandboxes_of({worker})  # it was woken and closed its sandboxes
    finally:
        owner.kill()
        owner.wait()
        if worker and not gone(worker):
            os.kill(worker, signal.SIGKILL)


def test_areset_right_after_the_idle_worker_is_killed_opens_a_live_one(cpu_problem) -> None:
    async def main() -> None:
        env = ProcessEnv(cpu_problem)
        await env.areset()
        for _ in range(4):
            pid = env._worker.pid
            os.kill(pid, signal.SIGKILL)
            obs, _ = await asyncio.wait_for(env.areset(), HANG_GUARD_S)
            assert "cpu-add" in obs and env._worker.pid != pid
        _, reward, terminated, *_ = await env.astep({"tool": "submit"})
        assert terminated and reward == 0.0
        await env.aclose()

    asyncio.run(main())


def test_bad_reset_options_and_unpicklable_arguments_are_named(cpu_problem) -> None:
    local = cudaenv.make(cpu_problem)
    with pytest.raises(SpecError, match="reset options must be a dict") as err:
        local.reset(options="task_id=cpu-add")
    assert err.value.field == "options"
    local.close()

    async def main() -> None:
        env = ProcessEnv(cpu_problem)
        with pytest.raises(SpecError, match="reset options must be a dict") as err:
            await env.areset(options="task_id=cpu-add")  # type: ignore[arg-type]
        assert err.value.field == "options"
        with pytest.raises(SpecError, match=r"options\['mode'\]") as err:
            await env.areset(options={"mode": threading.Lock()})
        assert err.value.field == "options"
        await env.areset()
        with pytest.raises(SpecError, match="action") as err:
            await env.astep({"tool": "bash", "args": {"command": lambda: "ls"}})
        assert err.value.field == "action"
        obs, *_ = await env.astep({"tool": "list_files"})  # the episode goes on
        assert "include" in obs
        await env.aclose()

    asyncio.run(main())
