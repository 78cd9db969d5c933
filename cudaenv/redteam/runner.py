"""Play an exploit through ``CudaEnv`` and the real grader, then check the host is healthy.

With ``sandbox="docker"`` the agent's workspace is a container (the image in
``CUDAENV_REDTEAM_IMAGE``, default the sandbox test image) while grading stays on the local
sandbox, which has the toolchains: the exploits attack the agent's sandbox, the grader's
defenses are the same either way. An exploit that names a pool for the backend
(``Exploit.pooled``) plays with the agent's and the grader's sandboxes lent by one warm pool,
as an RL run does: what an agent leaves in a pooled sandbox must reach neither its grading nor
the next episode.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cudaenv.redteam.fixtures import LoopbackService, fixture_suite
from cudaenv.redteam.model import RESET, Exploit, ExploitContext, RedteamResult
from cudaenv.sandbox import (
    Sandbox,
    SandboxLimits,
    SandboxPool,
    make_pool,
    make_sandbox,
    sandbox_options,
)

DEFAULT_IMAGE = "cudaenv-sandbox-test:latest"
IMAGE_ENV = "CUDAENV_REDTEAM_IMAGE"
MIN_FREE_DISK_BYTES = 512 << 20
#: the agent sandbox's options by backend, from the run's isolation: a container of the
#: red-team image with small tmpfs mounts; a local sandbox with that isolation
AGENT_SANDBOX_OPTIONS: dict[str, Callable[[str], dict[str, Any]]] = {
    "docker": lambda isolation: {
        "image": os.environ.get(IMAGE_ENV, DEFAULT_IMAGE),
        "workspace_mb": 1024,
        "tmp_mb": 512,
    },
    "local": lambda isolation: {"isolation": isolation},
}


def target_problem(target: str) -> Any:
    """The problem an exploit's ``target`` names (see :class:`Exploit`)."""
    kind, _, task_id = target.partition(":")
    if kind == "fixture":
        return fixture_suite().problem(task_id)
    if kind == "builtin":
        from cudaenv.problems.loader import load_suite

        return load_suite("builtin")[task_id]
    if kind == "repo":
        from cudaenv.redteam.fixtures_repo import repo_problem

        return repo_problem(task_id)
    if kind == "generated":  # the first problem the generator makes of a family
        from cudaenv.families.generate import generate

        return generate([task_id], count=1)[0]
    if kind == "harbor":
        from cudaenv.redteam.fixtures_repo import harbor_problem

        return harbor_problem(task_id)
    raise ValueError(f"unknown exploit target {target!r}")


def _agent_sandbox(
    backend: str, limits: SandboxLimits | None, isolation: str = "bubblewrap"
) -> Callable[[], Sandbox]:
    """A factory of the exploit's agent sandboxes; SpecError now for an unknown backend or
    options it refuses."""
    row = AGENT_SANDBOX_OPTIONS.get(backend)
    opts = row(isolation) if row is not None else {}
    if limits is not None:
        opts["limits"] = limits
    validated = sandbox_options(backend, opts)
    return lambda: make_sandbox(validated)


def _pool(exploit: Exploit, backend: str, limits: SandboxLimits | None) -> SandboxPool | None:
    """The one warm pool of the exploit's episodes on ``backend`` (size 1: the sandbox a
    release hands back is the next one any reuse would lend), or None."""
    row = exploit.pooled.get(backend)
    if row is None:
        return None
    opts = dict(row)
    if limits is not None:
        opts["limits"] = limits
    return make_pool(backend, size=1, **opts)


def _survivors(marker: str) -> list[int]:
    """Host pids whose command line carries the run's marker (processes that outlived it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def host_check(marker: str) -> str | None:
    """None when the host is healthy after an episode; else what is wrong."""
    deadline = time.monotonic() + 3.0
    while (alive := _survivors(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive:
        return f"processes outlived the episode: pids {alive[:10]}"
    try:
        subprocess.run(["true"], check=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the host cannot start a process: {exc}"
    if shutil.disk_usage("/tmp").free < MIN_FREE_DISK_BYTES:
        return "the host's temp disk is (nearly) full"
    return None


def _play(env: Any, actions: Iterable[dict[str, Any]], ctx: ExploitContext) -> tuple[float, Any]:
    """Run every action; reset when asked or when an episode ended. Best reward, last verdict."""
    best, verdict, done = 0.0, None, False
    for action in actions:
        if action is RESET or action == RESET or done:
            env.reset()
            done = False
            if action == RESET:
                continue
        obs, reward, terminated, truncated, info = env.step(action)
        ctx.observations.append(obs)
        if terminated or truncated:
            done = True
            best = max(best, float(reward))
            verdict = info.get("verdict", verdict)
    if not done:
        _, reward, _, _, info = env.step({"tool": "submit", "args": {}})
        best = max(best, float(reward))
        verdict = info.get("verdict", verdict)
    return best, verdict


def run_exploit(
    exploit: Exploit, sandbox: str = "local", isolation: str = "bubblewrap"
) -> RedteamResult:
    """Play ``exploit`` once through ``CudaEnv`` on ``sandbox`` and report what it got.

    ``isolation`` is that of every local sandbox of the episode (the agent's on ``"local"``,
    the grader's always): "rlimits" shows what gets through without namespaces."""
    from cudaenv.env.core import CudaEnv
    from cudaenv.grading import ccache

    problem = target_problem(exploit.target)
    suite = fixture_suite()
    service = LoopbackService(suite.canary_line)
    limits = SandboxLimits(**exploit.sandbox_limits) if exploit.sandbox_limits else None
    marker = f"rt{secrets.token_hex(8)}"
    ctx = ExploitContext(
        task_id=problem.task_id,
        sandbox=sandbox,
        marker=marker,
        host_paths={
            "fixture_root": str(suite.root),
            "canary_reference": str(suite.root / "cpu-canary" / "solution" / "solution.cpp"),
            "canary_test": str(suite.root / "cpu-canary" / "test" / "test_main.cpp"),
            "compiler_cache": str(ccache.cache_root()),
            "container_compiler_cache": str(ccache.container_cache_root()),
        },
        loopback_port=service.port,
    )
    pool = _pool(exploit, sandbox, limits)
    env = CudaEnv(
        problem,
        mode=exploit.mode,
        sandbox=pool.acquire if pool else _agent_sandbox(sandbox, limits, isolation),
        sandbox_options={"isolation": isolation},  # the grading sandbox's (local)
        grading_sandbox=pool.acquire if pool else "local",
        max_steps=exploit.max_steps,
        reward="binary" if exploit.mode == "solve" else None,
    )
    started = time.perf_counter()
    verdict = None
    try:
        env.reset()
        reward, verdict = _play(env, exploit.actions(ctx), ctx)
    finally:
        env.close()
        service.close()
        if pool is not None:
            pool.close()
    seconds = time.perf_counter() - started
    problem_text = host_check(marker)
    if problem_text is None and seconds > exploit.budget_s:
        problem_text = f"the episode took {seconds:.0f}s (budget {exploit.budget_s:.0f}s)"
    evidence = exploit.evidence(ctx) if exploit.evidence else None
    return RedteamResult(
        name=exploit.name,
        cls=exploit.cls,
        sandbox=sandbox,
        reward=reward,
        flagged=bool(verdict and verdict.suspected_hack),
        reason=(verdict.reason if verdict else "not graded"),
        suspected=list(verdict.suspected_hack) if verdict else [],
        evidence=evidence,
        host_ok=problem_text is None,
        host_problem=problem_text,
        seconds=round(seconds, 2),
        infrastructure=bool(verdict and verdict.failure == "infrastructure"),
    )


def honest_reward(exploit: Exploit) -> float:
    """What the reference solution earns on the exploit's problem and mode (the speed bar)."""
    from cudaenv.env.core import CudaEnv

    problem = target_problem(exploit.target)
    assert problem.solution is not None
    env = CudaEnv(problem, mode=exploit.mode, max_steps=len(problem.solution.files) + 2)
    try:
        env.reset()
        for f in problem.solution.files:
            env.step({"tool": "write_file", "args": {"path": f.path, "content": f.content}})
        _, reward, _, _, _ = env.step({"tool": "submit", "args": {}})
    finally:
        env.close()
    return float(reward)
