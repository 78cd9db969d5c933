"""CudaEnv overheads, side by side in one run: step vs the sandbox's own exec, reset, a whole episode.

Why: an RL loop pays these on every step and every episode, so they must stay small next to
the agent's own commands. Targets (medians): ``env.step`` of ``bash "true"`` at most 1 ms
more than ``sandbox.exec("true")`` of the same sandbox; ``reset`` <= 25 ms on the local
sandbox; a trivial episode (reset, three ``bash`` steps, submit and the grading of a problem
whose build and test commands are ``true``) <= 150 ms on the local sandbox and <= 500 ms on
docker with a warm ``DockerSandboxPool`` (agent and grading sandboxes both from the pool).

    python bench/bench_env.py [-n 200] [--episodes 30] [--image cudaenv-sandbox-test:latest]
                              [--no-docker] [--profile]

The docker rows are skipped, with a note, when the engine or the image is unavailable
(``bash .ci/docker-setup.sh`` starts dockerd and builds the test image). ``--profile`` runs
cProfile over the local episodes and prints where their time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.env.core import CudaEnv
from cudaenv.problems.model import Problem, SourceFile
from cudaenv.sandbox.base import Sandbox

BASH_TRUE = {"tool": "bash", "args": {"command": "true"}}
EPISODE_STEPS = [
    {"tool": "bash", "args": {"command": "echo '__global__ void k() {}' > solution.cu"}},
    {"tool": "bash", "args": {"command": "ls"}},
    {"tool": "bash", "args": {"command": "cat solution.cu"}},
    {"tool": "submit", "args": {}},
]
Row = tuple[str, int, float, str]  # name, samples, median ms, target verdict


def trivial_problem(
    task_id: str = "bench-trivial",
    prompt: str = "Write solution.cu (anything compiles: the build and the test are `true`).",
) -> Problem:
    """A cuda_cpp problem that needs no GPU and whose build and test are ``true`` (the
    benchmarks time the env around the commands, not the commands)."""
    return Problem(
        task_id=task_id,
        problem_type="cuda_cpp",
        group="cuda-kernels",
        prompt=prompt,
        metadata={"requires_gpu": False},
        context_files=[SourceFile(path="include/trivial.h", content="#pragma once\nint f();\n")],
        test_files=[SourceFile(path="test/test_main.cu", content="int main() { return 0; }\n")],
        build_command="true",
        test_command="true",
        timeout_seconds=30,
    )


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return f"<= {target:g} ms {'PASS' if value <= target else 'MISS'}"


def exec_vs_step(env: CudaEnv, n: int, label: str) -> list[Row]:
    """``sandbox.exec("true")`` and ``env.step(bash true)`` interleaved, on the same sandbox."""
    env.max_steps = 10 * n + 100  # never truncated here
    env.reset()
    box: Sandbox = env.sandbox
    exec_ms: list[float] = []
    step_ms: list[float] = []
    for i in range(n + 5):
        start = time.perf_counter()
        box.exec("true", timeout=120)
        e = ms_since(start)
        start = time.perf_counter()
        obs, _, term, trunc, _ = env.step(BASH_TRUE)
        s = ms_since(start)
        assert obs.startswith("exit code: 0") and not (term or trunc), obs
        if i >= 5:  # warm-up
            exec_ms.append(e)
            step_ms.append(s)
    exec_med, step_med = statistics.median(exec_ms), statistics.median(step_ms)
    over = step_med - exec_med
    return [
        (f"{label}: sandbox.exec('true')", n, exec_med, ""),
        (f"{label}: env.step(bash 'true')", n, step_med, ""),
        (f"{label}: step - exec (overhead)", n, over, verdict(over, 1.0)),
    ]


def resets(env: CudaEnv, n: int, label: str, target: float | None) -> list[Row]:
    """``reset`` in a loop (each one also closes the previous episode's sandbox)."""
    samples = []
    for i in range(n + 3):
        start = time.perf_counter()
        env.reset()
        if i >= 3:
            samples.append(ms_since(start))
    med = statistics.median(samples)
    return [(f"{label}: reset", n, med, verdict(med, target))]


def episodes(env: CudaEnv, n: int, label: str, target: float) -> list[Row]:
    """Whole trivial episodes; the phases are reported apart, the episode against the target."""
    phases: dict[str, list[float]] = {
        "reset": [],
        "bash 1": [],
        "bash 2": [],
        "bash 3": [],
        "submit + grading": [],
    }
    totals: list[float] = []
    names = list(phases)
    for i in range(n + 2):
        t0 = time.perf_counter()
        env.reset()
        marks = [ms_since(t0)]
        info: dict[str, Any] = {}
        for action in EPISODE_STEPS:
            start = time.perf_counter()
            _, _, term, _, info = env.step(action)
            marks.append(ms_since(start))
        total = ms_since(t0)
        v = info.get("verdict")
        assert term and v is not None and v.passed is True, v
        if i >= 2:  # warm-up
            totals.append(total)
            for name, m in zip(names, marks, strict=True):
                phases[name].append(m)
    rows: list[Row] = [
        (f"{label}: episode, {name}", n, statistics.median(s), "") for name, s in phases.items()
    ]
    med = statistics.median(totals)
    rows.append((f"{label}: whole trivial episode", n, med, verdict(med, target)))
    return rows


def docker_unavailable(image: str) -> str | None:
    """Why the docker rows cannot run here, or None."""
    try:
        from cudaenv.sandbox.docker import docker_client

        docker_client().images.get(image)
    except Exception as exc:  # any failure means: skip the docker rows
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def profile_local(make_env: Callable[[], CudaEnv], n: int) -> None:
    env = make_env()
    episodes(env, 3, "warm-up", 1e9)
    prof = cProfile.Profile()
    prof.enable()
    episodes(env, n, "profiled", 1e9)
    prof.disable()
    env.close()
    print(f"\ncProfile of {n} local episodes (top 30 by cumulative time):")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="samples for the step/exec rows")
    parser.add_argument("--resets", type=int, default=50, help="samples for the reset rows")
    parser.add_argument("--episodes", type=int, default=30, help="trivial episodes per backend")
    parser.add_argument("--image", default="cudaenv-sandbox-test:latest")
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the local episodes")
    args = parser.parse_args()
    # the build cache of the trivial problem goes to a throwaway directory
    os.environ["CUDAENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="cudaenv-bench-env-")
    problem = trivial_problem()

    def local_env() -> CudaEnv:
        return CudaEnv(problem, sandbox="local", max_steps=50)

    rows: list[Row] = []
    env = local_env()
    try:
        rows += exec_vs_step(env, args.n, "local")
        rows += resets(env, args.resets, "local", 25.0)
        rows += episodes(env, args.episodes, "local", 150.0)
    finally:
        env.close()

    note = None if not args.no_docker else "skipped (--no-docker)"
    if note is None:
        note = docker_unavailable(args.image)
    if note is None:
        from cudaenv.sandbox.docker import DockerSandboxPool

        with DockerSandboxPool(args.image, size=4) as pool:
            env = CudaEnv(problem, sandbox=pool.acquire, grading_sandbox=pool.acquire, max_steps=50)
            try:
                rows += exec_vs_step(env, args.n, "docker pool")
                rows += resets(env, args.resets, "docker pool", None)
                rows += episodes(env, args.episodes, "docker pool", 500.0)
            finally:
                env.close()

    width = max(len(r[0]) for r in rows)
    print(f"{'operation (medians)':<{width}}  {'n':>4}  {'ms':>8}  target")
    for name, n, med, target in rows:
        print(f"{name:<{width}}  {n:>4}  {med:>8.2f}  {target}")
    if note is not None:
        print(f"docker rows skipped: {note}")
    if args.profile:
        profile_local(local_env, args.episodes)


if __name__ == "__main__":
    main()
