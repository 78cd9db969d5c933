"""One episode as a unit of work: the job, running it, and its result as data.

Failure classes (for RL sample masking and honest evaluation), by the one rule of
:mod:`cudaenv.faults`:

- ``ok``: the episode ran and was graded (or truncated without grading); its reward is the
  policy's, pass or fail.
- ``agent_error``: the agent's failure, reward 0: :class:`~cudaenv.errors.AgentError` (a
  request the model server refused as malformed, no reference for the oracle, a CLI that
  is not installed).
- ``infrastructure``: the model server or the gateway failed
  (:class:`~cudaenv.errors.ModelServerError`), or the sandbox, the env, the grading
  machinery, a worker process that died and stayed dead after retries; an exception cudaenv
  did not raise on purpose (logged with its traceback); or a verdict with
  ``failure="infrastructure"``. Never counted as a policy failure, run again on resume.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from cudaenv.env.trajectory import Trajectory
from cudaenv.errors import SpecError
from cudaenv.faults import fault_of, is_unexpected
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem

if TYPE_CHECKING:
    from cudaenv.agents.base import Agent
    from cudaenv.env.core import CudaEnv

log = logging.getLogger(__name__)
Status = Literal["ok", "agent_error", "infrastructure"]
AgentSpec = str | Mapping[str, Any] | Callable[[], Any]


class EpisodeResult(BaseModel):
    """One finished episode, as stored in ``results.jsonl`` (the trajectory goes to
    ``trajectories.jsonl`` under the same key; in memory it rides along in ``trajectory``)."""

    key: str = Field(description='"<task_id>#<attempt>"')
    task_id: str
    group: str
    attempt: int
    agent: str | None = None
    status: Status = "ok"
    reward: float = 0.0
    verdict: Verdict | None = None
    error: str | None = None
    seconds: float = 0.0
    usage: dict[str, int] = Field(default_factory=dict)
    trajectory_path: str | None = None
    worker: str | None = None
    origin: str | None = Field(
        default=None, description="repair mode: the key of the failed sample it started from"
    )
    trajectory: Trajectory | None = Field(default=None, exclude=True)

    @property
    def passed(self) -> bool:
        return self.status == "ok" and self.verdict is not None and bool(self.verdict.passed)

    def record(self) -> dict[str, Any]:
        """The JSON record for the results store (trajectory excluded)."""
        return self.model_dump(mode="json")


@dataclass
class Job:
    """One episode to run; ``tries`` counts restarts after a worker died under it.

    ``env_options`` are this episode's own env options, over the run's (repair mode: the
    failing solution and its verdict); ``origin`` is recorded in its result.
    """

    problem: Problem
    attempt: int
    tries: int = 0
    env_options: dict[str, Any] = field(default_factory=dict)
    origin: str | None = None

    @property
    def key(self) -> str:
        return episode_key(self.problem.task_id, self.attempt)


def episode_key(task_id: str, attempt: int) -> str:
    return f"{task_id}#{attempt}"


def resolve_agent(spec: AgentSpec) -> Agent:
    """An agent from a factory (any callable), a registered name, or ``{"name": ..., **options}``."""
    from cudaenv.agents.registry import make_agent

    if isinstance(spec, str):
        return make_agent(spec)
    if isinstance(spec, Mapping):
        opts = dict(spec)
        name = opts.pop("name", None)
        if not isinstance(name, str):
            raise SpecError('an agent spec mapping needs a "name"', field="agent")
        return make_agent(name, **opts)
    if callable(spec):
        return spec()
    raise SpecError(f"not an agent spec: {spec!r}", field="agent")


def _describe(exc: BaseException) -> str:
    tail = "".join(traceback.format_exception(exc)[-3:]).strip()
    return f"{type(exc).__name__}: {exc}\n{tail}"[:4000]


def run_job(
    agent: Agent,
    job: Job,
    env_options: Mapping[str, Any],
    *,
    env: CudaEnv | None = None,
    worker: str | None = None,
) -> EpisodeResult:
    """Run one episode and classify how it ended; never raises for episode failures.

    ``env`` lets a worker reuse an env it owns (it is reset by the agent); otherwise one is
    made from ``env_options`` and closed afterwards.
    """
    import cudaenv

    started = time.perf_counter()
    problem = job.problem
    own = env is None
    status: Status = "ok"
    error = None
    traj: Trajectory | None = None
    try:
        if env is None:
            env = cudaenv.make(problem, **{**env_options, **job.env_options})
        traj = agent.run(env, seed=job.attempt)
    except Exception as exc:  # classified by the one rule of cudaenv.faults
        status = "agent_error" if fault_of(exc) == "agent" else "infrastructure"
        error = _describe(exc)
        if is_unexpected(exc):
            log.error("episode %s: unexpected exception (infrastructure)", job.key, exc_info=exc)
    finally:
        if own and env is not None:
            try:
                env.close()
            except Exception as exc:  # a failed cleanup must not lose the result
                error = error or f"close failed: {exc}"
    if traj is None and env is not None:
        traj = env.trajectory  # a partial record is still worth keeping
    verdict = traj.verdict if traj is not None else None
    if status == "ok" and verdict is not None and verdict.failure == "infrastructure":
        status, error = "infrastructure", verdict.reason
    return EpisodeResult(
        key=job.key,
        task_id=problem.task_id,
        group=problem.group,
        attempt=job.attempt,
        agent=(traj.agent if traj is not None else None) or getattr(agent, "name", None),
        status=status,
        reward=float(traj.reward) if traj is not None and status == "ok" else 0.0,
        verdict=verdict,
        error=error,
        seconds=round(time.perf_counter() - started, 4),
        usage=dict(traj.usage) if traj is not None else {},
        worker=worker,
        origin=job.origin,
        trajectory=traj,
    )


def infrastructure_result(
    job: Job, error: str, *, seconds: float = 0.0, worker: str | None = None
) -> EpisodeResult:
    """The result for an episode the machinery could not run (e.g. its worker kept dying)."""
    return EpisodeResult(
        key=job.key,
        task_id=job.problem.task_id,
        group=job.problem.group,
        attempt=job.attempt,
        status="infrastructure",
        error=error,
        seconds=seconds,
        worker=worker,
        origin=job.origin,
    )
