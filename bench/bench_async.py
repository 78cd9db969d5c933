"""Concurrent episodes through ``astep`` in one event loop vs the threaded ``run_episodes``.

Why: async trainers (SkyRL, verifiers, TRL's async rollouts) run hundreds of episodes in one
event loop; the env's async methods must keep up with the threaded runner and never stall
the loop (a stalled loop delays every other episode's model call). Targets: async
episodes/s >= the threaded runner's; the loop's worst stall <= 10 ms (a ticker task sleeping
1 ms and measuring how late it wakes).

    PYTHONPATH=. python bench/bench_async.py [--episodes 256] [--workers 64] [--threads N]

A trivial episode: reset, ``bash true``, ``list_files``, submit, and the grading of a
problem whose build and test commands are ``true`` (local sandbox). Both sides run the same
steps with the same concurrency (``--workers`` threads for the runner; ``--episodes``
concurrent episodes on the async pool, ``CUDAENV_ASYNC_THREADS`` bound).

Measured on a quiet 2-CPU host (load 0-2 before each run), 256 episodes, three runs back to
back: with 16 pool threads (the old default, 8 per CPU) 1.05x the threaded runner, worst stall
77-90 ms, p99 49-55 ms; after the kills were made GIL-free and the default became 2 per CPU
(4 here), five runs: 0.94-1.27x, worst 23-38 ms, p99 8.6-10.1 ms, the ticker alone 0.4-0.6
ms. The stall is the GIL: between subprocesses the pool threads run Python, and the loop waits
behind every thread doing so (py-spy --gil shows no single holder left; no full garbage
collection fell inside the timed window, and gc.freeze() changed nothing). Below ~10 ms at
worst needs episodes out of the loop's process (worker processes), not fewer threads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from bench.bench_env import trivial_problem
from cudaenv.env.aio import ENV_VAR, async_threads
from cudaenv.env.core import CudaEnv
from cudaenv.env.trajectory import Trajectory
from cudaenv.problems.model import Problem
from cudaenv.rollout import run_episodes

STEPS: list[dict[str, Any]] = [
    {"tool": "bash", "args": {"command": "true"}},
    {"tool": "list_files", "args": {}},
    {"tool": "submit", "args": {}},
]


class StepsAgent:
    """The same steps as the async episodes, for the threaded runner."""

    name = "steps"

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        env.reset(seed=seed)
        for action in STEPS:
            env.step(action)
        assert env.trajectory is not None
        return env.trajectory


async def _episode(problem: Problem) -> bool:
    env = CudaEnv(problem)
    try:
        await env.areset()
        for action in STEPS:
            *_, term, _trunc, _info = await env.astep(action)
        return bool(term)
    finally:
        env.close()


async def _ticker(stop: asyncio.Event, lateness: list[float], period_s: float = 0.001) -> None:
    """Sleep ``period_s`` repeatedly; record how late each wake-up is (the loop's stalls)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        due = loop.time() + period_s
        await asyncio.sleep(period_s)
        lateness.append(max(0.0, loop.time() - due))


async def run_async(problem: Problem, n: int) -> tuple[float, list[float], int]:
    lateness: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(stop, lateness))
    start = time.perf_counter()
    done = await asyncio.gather(*(_episode(problem) for _ in range(n)))
    seconds = time.perf_counter() - start
    stop.set()
    await ticker
    return seconds, lateness, sum(done)


async def idle_ticks(seconds: float) -> list[float]:
    """The ticker alone for ``seconds``: how late wake-ups are with no episode running."""
    lateness: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(stop, lateness))
    await asyncio.sleep(seconds)
    stop.set()
    await ticker
    return lateness


def run_threaded(problem: Problem, n: int, workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    results = list(run_episodes(StepsAgent, [problem], attempts=n, workers=workers))
    seconds = time.perf_counter() - start
    return seconds, sum(r.status == "ok" and r.trajectory is not None for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=256, help="concurrent episodes")
    parser.add_argument(
        "--threads", type=int, default=None, help="the async pool's bound (CUDAENV_ASYNC_THREADS)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="runner threads (default: episodes, at most 64)"
    )
    args = parser.parse_args()
    n = args.episodes
    if args.threads:
        os.environ[ENV_VAR] = str(args.threads)
    workers = args.workers or min(n, 64)
    problem = trivial_problem("bench-async", "Anything passes: the build and the test are `true`.")
    load_before = os.getloadavg()[0]

    idle = asyncio.run(idle_ticks(1.0))  # the machine's own noise, nothing else running
    asyncio.run(run_async(problem, 2))  # warm-up: the sandbox's helpers, a first pool thread
    t_async, lateness, ok_async = asyncio.run(run_async(problem, n))
    t_thr, ok_thr = run_threaded(problem, n, workers)

    worst_ms = max(lateness) * 1000 if lateness else 0.0
    p99_ms = statistics.quantiles(lateness, n=100)[98] * 1000 if len(lateness) >= 100 else worst_ms
    rate_async, rate_thr = n / t_async, n / t_thr
    ratio = rate_async / rate_thr
    print(f"{'case':34}  {'episodes/s':>10}  {'seconds':>8}  note")
    print(
        f"{'astep, ' + str(n) + ' concurrent (pool ' + str(async_threads()) + ')':34}  "
        f"{rate_async:>10.1f}  {t_async:>8.2f}  {ok_async}/{n} terminated"
    )
    print(
        f"{'run_episodes, ' + str(workers) + ' threads':34}  {rate_thr:>10.1f}  {t_thr:>8.2f}  "
        f"{ok_thr}/{n} ok"
    )
    print(
        f"\nasync / threaded throughput: {ratio:.2f}x (target >= 1.0x) {'OK' if ratio >= 1 else 'MISS'}"
    )
    print(
        f"event loop stall: worst {worst_ms:.1f} ms, p99 {p99_ms:.1f} ms over {len(lateness)} ticks "
        f"(target worst <= 10 ms) {'OK' if worst_ms <= 10 else 'MISS'}"
    )
    print(f"ticker alone (machine noise): worst {max(idle) * 1000:.1f} ms over {len(idle)} ticks")
    print(
        f"load average (1 min) before/after: {load_before:.1f} / {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
