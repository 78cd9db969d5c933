"""The ``Agent`` protocol: what the rollout runner and the CLI drive.

An agent gets a reset-able :class:`~cudaenv.env.core.CudaEnv`, resets it, acts until the
episode is terminated or truncated, and returns ``env.trajectory`` with ``agent`` and
``usage`` filled in. Agents raise :class:`cudaenv.errors.AgentError` for their own failures
(model server unreachable, no reference solution); environment and sandbox faults propagate
as the env raised them, so the runner can tell the two apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from cudaenv.errors import AgentError

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory

__all__ = ["Agent", "finish_trajectory"]


@runtime_checkable
class Agent(Protocol):
    """Anything with a ``name`` and ``run(env) -> Trajectory``.

    ``run`` may be called many times (one episode each) but never concurrently on one
    agent; the runner makes one agent per worker thread or Ray actor.
    """

    name: str

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        """Reset ``env``, act until the episode ends, return its trajectory."""
        ...


def finish_trajectory(
    env: CudaEnv, name: str, usage: Mapping[str, int] | None = None
) -> Trajectory:
    """The env's trajectory with the agent's name and token usage recorded.

    Raises AgentError when the episode never started, so a caller never sees a half record
    passed off as a finished one.
    """
    traj = env.trajectory
    if traj is None:
        raise AgentError(f"agent {name!r} returned before resetting the environment")
    traj.agent = name
    if usage:
        traj.usage = {k: int(v) for k, v in usage.items()}
    return traj
