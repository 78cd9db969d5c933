"""The Ray path: a pool of actors, each owning its agent, envs and sandboxes.

Ray stays out of the env (as gymnasium keeps ``vector/`` apart from envs): only this module
imports it, lazily. An actor runs one episode at a time; a dead actor (its process killed,
OOM) is replaced and its episode retried up to ``max_retries`` times, then reported as an
``infrastructure`` result.

A killed driver leaves nothing behind: actors are never detached, so Ray ends them with
their owner, and :func:`init_ray` starts a watcher (:mod:`cudaenv.rollout._janitor`) that
outlives a SIGKILLed driver just long enough to kill its remaining Ray processes and remove
the sandboxes (containers, dirs, mounts) its workers had open.
"""

from __future__ import annotations

import contextlib
import os
import site
import sys
import sysconfig
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cudaenv.errors import MissingExtraError
from cudaenv.rollout.episode import (
    AgentSpec,
    EpisodeResult,
    Job,
    infrastructure_result,
    resolve_agent,
    run_job,
)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray") from None
    return ray


def _source_root() -> str | None:
    """The checkout holding ``cudaenv`` when it is not installed (workers need it on their path)."""
    import cudaenv

    root = Path(cudaenv.__file__).resolve().parents[1]
    installed = {
        Path(p).resolve() for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    }
    return None if root in installed else str(root)


def worker_runtime_env() -> dict[str, Any] | None:
    root = _source_root()
    if root is None:
        return None
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


def init_ray(address: str | None = None, **kwargs: Any) -> None:
    """Start (or join) Ray once: locally without the dashboard, or ``address="auto"`` for a
    cluster. Workers get the cudaenv checkout on their path when it is not installed; a
    watcher cleans up after this driver if it dies without doing so (see the module doc)."""
    ray = _ray()
    if ray.is_initialized():
        return
    if sys.platform.startswith("linux"):  # the watcher reads /proc
        from cudaenv.rollout import _janitor

        _janitor.start()
    opts: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": True,
        "configure_logging": False,
    }
    runtime_env = worker_runtime_env()
    if runtime_env:
        opts["runtime_env"] = runtime_env
    opts.update(kwargs)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(address=address or "local", **opts)  # None: never a stale /tmp/ray cluster
            return
        except Exception as exc:
            if attempt == START_ATTEMPTS or not _start_timed_out(exc, address):
                raise
            ray.shutdown()  # the half-started node's processes, then a fresh start


#: starts of a local Ray node tried before giving up (a loaded host can miss Ray's fixed 30 s
#: wait for its raylet to register; CI saw it at a load average of 12 on 2 cores)
START_ATTEMPTS = 3


def _start_timed_out(exc: BaseException, address: str | None) -> bool:
    """Whether ``ray.init`` failed only because a node it started here was slow to register
    (joining an existing cluster is not retried: that failure is the cluster's answer)."""
    local = address in (None, "local")
    return local and "timed out during startup" in str(exc)


class EpisodeWorker:
    """The actor body: builds its agent once and keeps one env per task_id it has seen."""

    def __init__(self, agent_spec: AgentSpec, env_options: Mapping[str, Any], name: str) -> None:
        self.agent = resolve_agent(agent_spec)
        self.env_options = dict(env_options)
        self.name = name
        self.envs: dict[str, Any] = {}

    def pid(self) -> int:
        return os.getpid()

    def run(self, job: Job) -> EpisodeResult:
        import cudaenv

        env = None if job.env_options else self.envs.get(job.problem.task_id)
        if env is None and not job.env_options:  # an episode with options of its own: run_job
            try:
                env = cudaenv.make(job.problem, **self.env_options)
            except Exception:  # run_job makes (and classifies) it again
                env = None
            else:
                self.envs[job.problem.task_id] = env
        return run_job(
            self.agent, job, self.env_options, env=env, worker=f"{self.name}:{os.getpid()}"
        )

    def hold_envs(self, problems: list[Any]) -> int:
        """Make and reset one env per problem and keep them idle (memory measurements)."""
        import cudaenv

        for i, p in enumerate(problems):
            env = cudaenv.make(p, **self.env_options)
            env.reset(seed=i)
            self.envs[f"{p.task_id}@{i}"] = env
        return self.rss_bytes()

    @staticmethod
    def rss_bytes() -> int:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


class RayBackend:
    """Feeds jobs to idle actors, collects results, replaces dead actors."""

    def __init__(
        self,
        agent_spec: AgentSpec,
        env_options: Mapping[str, Any],
        workers: int,
        *,
        num_cpus: float = 1,
        num_gpus: float = 0,
        address: str | None = None,
        max_retries: int = 2,
        requeue: Callable[[Job], None],
    ) -> None:
        self.ray = ray = _ray()
        init_ray(address)
        options: dict[str, Any] = {"num_cpus": num_cpus, "max_restarts": 0, "max_task_retries": 0}
        if num_gpus:
            options["num_gpus"] = num_gpus
        runtime_env = worker_runtime_env()
        if runtime_env:
            options["runtime_env"] = runtime_env
        self._cls = ray.remote(EpisodeWorker).options(**options)
        self._spec = agent_spec
        self._env_options = dict(env_options)
        self._count = 0
        self.max_retries = max_retries
        self._requeue = requeue
        self.idle: deque[Any] = deque(self._spawn() for _ in range(workers))
        self.inflight: dict[Any, tuple[Any, Job]] = {}

    def _spawn(self) -> Any:
        self._count += 1
        return self._cls.remote(self._spec, self._env_options, f"worker-{self._count}")

    def has_capacity(self) -> bool:
        return bool(self.idle)

    def busy(self) -> bool:
        return bool(self.inflight)

    def submit(self, job: Job) -> None:
        actor = self.idle.popleft()
        self.inflight[actor.run.remote(job)] = (actor, job)

    def wait(self, timeout: float) -> list[EpisodeResult]:
        ray = self.ray
        if not self.inflight:
            return []
        ready, _ = ray.wait(list(self.inflight), num_returns=1, timeout=timeout)
        out = []
        for ref in ready:
            actor, job = self.inflight.pop(ref)
            try:
                out.append(ray.get(ref))
                self.idle.append(actor)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                self._replace(actor)
                if job.tries < self.max_retries:
                    job.tries += 1
                    self._requeue(job)
                else:
                    out.append(
                        infrastructure_result(
                            job, f"worker died {job.tries + 1} times: {exc}"[:4000]
                        )
                    )
            except ray.exceptions.RayError as exc:  # the actor is alive; the call itself failed
                self.idle.append(actor)
                out.append(infrastructure_result(job, f"{type(exc).__name__}: {exc}"[:4000]))
        return out

    def _replace(self, actor: Any) -> None:
        with contextlib.suppress(Exception):  # already gone
            self.ray.kill(actor, no_restart=True)
        self.idle.append(self._spawn())

    def stop(self) -> None:
        """Kill every actor (running episodes are abandoned; their sandboxes die with them)."""
        for actor in [*self.idle, *(a for a, _ in self.inflight.values())]:
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(actor, no_restart=True)
        self.idle.clear()
        self.inflight.clear()
