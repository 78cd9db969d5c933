"""The grading service: the baseline store, the scheduler and its graders, started together.

Both actors run on the driver's node with no CPU reserved (they only route and hold data),
so a removed worker node never takes the queue or the baselines with it; the graders are
the scheduler's (Ray ends them with it).
"""

from __future__ import annotations

import contextlib
from typing import Any

from cudaenv.cluster import _ray
from cudaenv.cluster.baselines import BaselineStore, StoreStats
from cudaenv.cluster.config import ClusterConfig
from cudaenv.cluster.grader import GradeOutcome, GraderInfo, Interval
from cudaenv.cluster.scheduler import GraderSpec, Scheduler, SchedulerSettings, SchedulerStatus
from cudaenv.cluster.seam import ExclusiveWork


def grader_specs(config: ClusterConfig, resources: dict[str, float]) -> list[GraderSpec]:
    """One GPU grader per GPU, one CPU grader per unit of ``grader_resource`` (or the
    configured counts)."""
    gpus = config.gpu_graders
    cpus = config.cpu_graders
    n_gpu = int(resources.get("GPU", 0)) if gpus == "auto" else gpus
    n_cpu = int(resources.get(config.grader_resource, 0)) if cpus == "auto" else cpus
    cpu_each = {"num_cpus": config.grader_cpus}
    specs = [
        GraderSpec(name=f"gpu-{i}", kind="gpu", options={"num_gpus": 1, **cpu_each})
        for i in range(n_gpu)
    ]
    specs += [
        GraderSpec(
            name=f"cpu-{i}",
            kind="cpu",
            options={"resources": {config.grader_resource: 1}, **cpu_each},
        )
        for i in range(n_cpu)
    ]
    return specs


class GradingService:
    """Handles on the service's actors, and the calls the driver and the bench make on them."""

    def __init__(self, config: ClusterConfig, *, start_timeout_s: float = 300.0) -> None:
        ray = _ray.ray()
        here = _ray.on_this_node()
        self.store = (
            ray.remote(BaselineStore)
            .options(**_ray.actor_options(num_cpus=0, scheduling_strategy=here))
            .remote()
        )
        self.specs = grader_specs(config, ray.cluster_resources())
        settings = SchedulerSettings(
            max_inflight=config.max_inflight_per_grader,
            max_retries=config.max_retries,
            grader_wait_s=config.grader_wait_s,
            baseline_wait_s=config.baseline_wait_s,
        )
        self.scheduler = (
            ray.remote(Scheduler)
            .options(
                **_ray.actor_options(num_cpus=0, scheduling_strategy=here, max_concurrency=10_000)
            )
            .remote(self.specs, self.store, settings)
        )
        self.graders: list[GraderInfo] = ray.get(self.scheduler.start.remote(start_timeout_s))
        self.served: list[str] = ray.get(self.scheduler.served.remote())

    def submit(self, work: ExclusiveWork) -> Any:
        """An ObjectRef of the work's :class:`GradeOutcome`."""
        return self.scheduler.submit.remote(work)

    def grade(self, work: ExclusiveWork) -> GradeOutcome:
        return _ray.ray().get(self.submit(work))

    def status(self, timeout_s: float = 10.0) -> SchedulerStatus:
        return _ray.ray().get(self.scheduler.status.remote(), timeout=timeout_s)

    def intervals(self) -> dict[str, list[Interval]]:
        return _ray.ray().get(self.scheduler.intervals.remote())

    def baselines(self) -> StoreStats:
        return _ray.ray().get(self.store.stats.remote())

    def stop(self) -> None:
        ray = _ray.ray()
        with contextlib.suppress(Exception):  # already gone: its graders went with it
            ray.get(self.scheduler.stop.remote(), timeout=30)
        _ray.kill(self.scheduler)
        _ray.kill(self.store)
