"""Rollout throughput and overheads: Ray 1 vs 2 workers, Ray vs in-process, worker memory.

Why: the Ray pool exists to run compile-bound episodes side by side; this shows whether it
scales on this machine, what it costs per episode when episodes are trivial, and what a
worker holding idle environments weighs. Targets: >= 1.8x with 2 workers, <= 5 ms overhead
per episode, < 300 MB RSS for a worker holding 8 idle envs.

    PYTHONPATH=. python bench/bench_rollout.py [--limit 12] [--trivial 200] [--ids a,b]

Throughput uses the oracle on bundled cuda_cpp problems (cuda-kernels by default) with the build cache off, so every
episode compiles with nvcc (without a GPU the GPU stages are skipped).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import ray

from cudaenv.env.trajectory import Trajectory
from cudaenv.problems.loader import load_suite
from cudaenv.rollout import run_episodes
from cudaenv.rollout.ray_pool import EpisodeWorker, init_ray, worker_runtime_env


class TrivialAgent:
    """Touches nothing: the episode costs only what the runner adds."""

    name = "trivial"

    def run(self, env: Any, *, seed: int | None = None) -> Trajectory:
        env.trajectory = Trajectory(
            task_id=env.problem.task_id, mode=env.mode, instruction="", reward=1.0, terminated=True
        )
        return env.trajectory


def timed(**kwargs: Any) -> tuple[float, list[Any]]:
    start = time.perf_counter()
    results = list(run_episodes(**kwargs))
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=12, help="problems in the throughput runs")
    parser.add_argument(
        "--groups", default="cuda-kernels", help="comma-separated groups for the throughput runs"
    )
    parser.add_argument("--trivial", type=int, default=200, help="episodes in the overhead runs")
    parser.add_argument("--ids", default="", help="comma-separated task ids (instead of --groups)")
    args = parser.parse_args()

    init_ray(num_cpus=2)
    load_before = os.getloadavg()[0]
    suite = load_suite("builtin")
    if args.ids:
        suite = suite.filter(include=args.ids.split(","))
    else:
        suite = suite.filter(groups=args.groups.split(","))
    cpp = [p for p in suite if p.problem_type == "cuda_cpp" and p.build_command][: args.limit]
    env_options = {"grade_options": {"build_cache": False}}
    rows: list[tuple[str, str, str, str]] = []

    # warm-up: start and stop one actor so the first measured run does not pay Ray's start-up
    list(run_episodes(TrivialAgent, cpp[:2], use_ray=True, workers=2))

    t1, r1 = timed(agent="oracle", problems=cpp, workers=1, use_ray=True, env_options=env_options)
    t2, r2 = timed(agent="oracle", problems=cpp, workers=2, use_ray=True, env_options=env_options)
    compiled = sum(bool(r.verdict and r.verdict.compiled) for r in r1 + r2)
    bad = [r.key for r in r1 + r2 if r.status != "ok" or not (r.verdict and r.verdict.compiled)]
    speedup = t1 / t2
    rows.append(
        ("oracle, 1 Ray worker", f"{len(cpp) / t1:.2f} ep/s", f"{t1:.1f} s for {len(cpp)}", "")
    )
    rows.append(
        (
            "oracle, 2 Ray workers",
            f"{len(cpp) / t2:.2f} ep/s",
            f"{t2:.1f} s for {len(cpp)}",
            f"{speedup:.2f}x (target >= 1.8x) {'OK' if speedup >= 1.8 else 'MISS'}",
        )
    )

    # per-episode overhead in steady state: time N and 2N episodes and difference them, so
    # fixed costs (actor start-up, thread-pool start) cancel; those are reported apart
    n = args.trivial

    def problems_for(count: int, tag: str) -> list[Any]:  # distinct task_ids: one key each
        return [
            cpp[i % len(cpp)].model_copy(update={"task_id": f"{tag}-{i}"}) for i in range(count)
        ]

    ti1, _ = timed(agent=TrivialAgent, problems=problems_for(n, "a"), workers=1)
    ti2, _ = timed(agent=TrivialAgent, problems=problems_for(2 * n, "b"), workers=1)
    tr1, _ = timed(agent=TrivialAgent, problems=problems_for(n, "c"), workers=1, use_ray=True)
    tr2, _ = timed(agent=TrivialAgent, problems=problems_for(2 * n, "d"), workers=1, use_ray=True)
    per_in = (ti2 - ti1) / n * 1000
    per_ray = (tr2 - tr1) / n * 1000
    overhead_ms = per_ray - per_in
    fixed_s = tr1 - per_ray * n / 1000
    rows.append(("trivial, in-process", f"{1000 / per_in:.0f} ep/s", f"{per_in:.2f} ms/ep", ""))
    rows.append(
        (
            "trivial, 1 Ray worker",
            f"{1000 / per_ray:.0f} ep/s",
            f"{per_ray:.2f} ms/ep",
            f"+{overhead_ms:.2f} ms/ep (target <= 5 ms) {'OK' if overhead_ms <= 5 else 'MISS'}",
        )
    )
    rows.append(("Ray pool start-up (fixed)", "", f"{fixed_s:.2f} s", "once per run_episodes call"))

    options: dict[str, Any] = {"num_cpus": 1}
    if worker_runtime_env():
        options["runtime_env"] = worker_runtime_env()
    actor = ray.remote(EpisodeWorker).options(**options).remote("nop", {}, "rss")
    before = ray.get(actor.rss_bytes.remote())
    after = ray.get(
        actor.hold_envs.remote(cpp[:8] if len(cpp) >= 8 else [cpp[i % len(cpp)] for i in range(8)])
    )
    ray.get(actor.close.remote())
    ray.kill(actor)
    mb = after / 2**20
    rows.append(("worker RSS, empty", "", f"{before / 2**20:.0f} MB", ""))
    rows.append(
        (
            "worker RSS, 8 idle envs",
            "",
            f"{mb:.0f} MB",
            f"target < 300 MB {'OK' if mb < 300 else 'MISS'}",
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'case':{width}}  {'rate':>10}  {'time / size':>18}  verdict")
    for name, rate, size, verdict in rows:
        print(f"{name:{width}}  {rate:>10}  {size:>18}  {verdict}")
    print(
        f"\nload average (1 min) before/after: {load_before:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{compiled}/{len(r1) + len(r2)} oracle episodes compiled; problems: {', '.join(p.task_id for p in cpp)}"
    )
    if bad:
        print(f"not ok or not compiled: {bad}")


if __name__ == "__main__":
    main()
