"""How a cluster run is laid out: one validated model, so a bad setting fails before Ray starts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cudaenv.errors import SpecError

Priority = Literal["evaluation", "training"]
PRIORITY_RANK: dict[str, int] = {"evaluation": 0, "training": 1}  # lower runs first
GRADER_RESOURCE = "cudaenv_grader"


class ClusterConfig(BaseModel):
    """Where and how episodes and their exclusive grading stages run on Ray.

    GPU graders: one per GPU the cluster has (``"auto"``), each an actor holding
    ``num_gpus=1``, so Ray pins ``CUDA_VISIBLE_DEVICES``. CPU graders: one per unit of the
    custom resource ``grader_resource`` that nodes advertise (``ray start
    --resources='{"cudaenv_grader": 1}'``); they time benchmarked problems that need no GPU.
    """

    model_config = ConfigDict(extra="forbid")

    ray_address: str | None = Field(
        default=None, description='None: a local Ray; "auto", "host:port" or "ray://...": join'
    )
    episode_workers: int = Field(default=2, ge=1, description="CPU actors running episodes")
    episodes_per_worker: int = Field(
        default=1, ge=1, description="episodes one worker runs at once (threads)"
    )
    worker_cpus: float = Field(default=1.0, ge=0, description="CPUs each episode worker holds")
    gpu_graders: int | Literal["auto"] = "auto"
    cpu_graders: int | Literal["auto"] = "auto"
    grader_cpus: float = Field(default=1.0, ge=0, description="CPUs each grader holds")
    grader_resource: str = GRADER_RESOURCE
    max_inflight_per_grader: int = Field(
        default=2, ge=1, description="work handed to one grader at once (one runs, the rest wait)"
    )
    max_retries: int = Field(
        default=2, ge=0, description="re-runs of an episode or grading whose actor died"
    )
    priority: Priority = "training"
    window: int | None = Field(
        default=None, ge=1, description="episodes submitted at once; default 2 x capacity"
    )
    grader_wait_s: float = Field(
        default=600.0, gt=0, description="how long work waits with no live grader of its kind"
    )
    baseline_wait_s: float = Field(
        default=300.0, ge=0, description="how long a grader waits for another to time a baseline"
    )

    @property
    def capacity(self) -> int:
        return self.episode_workers * self.episodes_per_worker

    @property
    def submit_window(self) -> int:
        return self.window or 2 * self.capacity


def cluster_config(config: ClusterConfig | None = None, **overrides: object) -> ClusterConfig:
    """``config`` with ``overrides`` applied, validated; :class:`SpecError` names the field."""
    base = config.model_dump() if config is not None else {}
    try:
        return ClusterConfig.model_validate({**base, **overrides})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or None
        raise SpecError(f"cluster config: {field}: {err['msg']}", field=field) from None
