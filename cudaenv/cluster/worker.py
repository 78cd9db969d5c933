"""Episode workers: CPU actors anywhere in the cluster that run whole episodes (agent turns,
sandboxes, builds) and hand only the exclusive grading stages to the grading service.

A worker hides the GPU from itself (``CUDAENV_FORCE_NO_GPU=1``): nothing it runs may use a
device a grader owns. Its episodes' envs are plain CudaEnvs whose ``grader`` is
:func:`grade_on_cluster` (the env still freezes, collects and closes the agent's sandbox).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from cudaenv.cluster.seam import (
    NO_GPU_ENV,
    ExclusiveWork,
    GradeCall,
    build_stages,
    infrastructure_verdict,
    route,
)
from cudaenv.env.core import CudaEnv
from cudaenv.grading.verdict import Verdict
from cudaenv.rollout.episode import (
    AgentSpec,
    EpisodeResult,
    Job,
    infrastructure_result,
    resolve_agent,
    run_job,
)
from cudaenv.sandbox.base import declare_workers


def grade_on_cluster(
    call: GradeCall,
    *,
    scheduler: Any,
    store: Any,
    served: set[str],
    episode: str = "",
    priority: int = 1,
) -> Verdict:
    """Grade ``call`` on the cluster: here when it needs no exclusive device (or its part
    before one), then on a grader of the kind it needs; blocks until the verdict is in."""
    from cudaenv.cluster._ray import ray

    r = ray()
    kind = route(call, served)
    known = True
    if kind is not None and call.timed and call.problem.baseline_solution is not None:
        known = bool(r.get(store.knows.remote(call.problem.content_hash())))
    verdict, builds, seconds, checks = build_stages(call, kind, baseline_known=known)
    if verdict is not None or kind is None:
        return verdict or infrastructure_verdict(call, "no verdict")
    work = ExclusiveWork(
        kind=kind,
        call=call,
        episode=episode,
        priority=priority,
        builds=[r.put(b) for b in builds],  # fetched by the grader only on a cache miss
        before_s=seconds,
        checks=checks,
    )
    outcome = r.get(scheduler.submit.remote(work))
    return outcome.verdict or infrastructure_verdict(call, "the grader returned no verdict")


class EpisodeWorker:
    """The actor body: a threaded actor, one agent per thread, one env per episode;
    ``per_node``: how many episodes may run at once on this worker's node."""

    def __init__(
        self,
        agent_spec: AgentSpec,
        env_options: Mapping[str, Any],
        name: str,
        scheduler: Any,
        store: Any,
        served: list[str],
        per_node: int = 1,
    ) -> None:
        os.environ[NO_GPU_ENV] = "1"  # a grader's device is never used from here
        declare_workers(per_node)  # the sandboxes' memory default shares the node among them
        self.spec = agent_spec
        self.env_options = dict(env_options)
        self.name = name
        self.scheduler = scheduler
        self.store = store
        self.served = set(served)
        self._local = threading.local()

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        from cudaenv.cluster._ray import ray

        return str(ray().get_runtime_context().get_node_id())

    def run(self, job: Job, priority: int = 1) -> EpisodeResult:
        agent = getattr(self._local, "agent", None)
        if agent is None:
            agent = self._local.agent = resolve_agent(self.spec)

        def router(call: GradeCall) -> Verdict:
            return grade_on_cluster(
                call,
                scheduler=self.scheduler,
                store=self.store,
                served=self.served,
                episode=job.key,
                priority=priority,
            )

        worker = f"{self.name}:{os.getpid()}"
        try:
            env = CudaEnv(job.problem, grader=router, **self.env_options)
        except Exception as exc:  # a bad option, a sandbox that cannot start: not the agent's
            why = f"could not make the env: {type(exc).__name__}: {exc}"[:4000]
            return infrastructure_result(job, why, worker=worker)
        try:
            return run_job(agent, job, self.env_options, env=env, worker=worker)
        finally:
            env.close()
