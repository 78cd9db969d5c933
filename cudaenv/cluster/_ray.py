"""Ray, imported lazily, and the few things every cluster actor needs from it.

Only :mod:`cudaenv.cluster` imports this; ``import cudaenv`` never loads Ray.
"""

from __future__ import annotations

from typing import Any

from cudaenv.errors import MissingExtraError


def ray() -> Any:
    try:
        import ray as ray_module
    except ImportError:
        raise MissingExtraError("ray", "ray") from None
    return ray_module


def join(address: str | None) -> None:
    """Join the cluster at ``address`` ("auto", "host:port", "ray://...") or start a local
    Ray (None), once per process, with the rollout path's settings (workers get a source
    checkout on their path; a watcher cleans up after a SIGKILLed driver). None means a
    fresh local instance, never whatever cluster this host ran last."""
    from cudaenv.rollout.ray_pool import init_ray

    init_ray(address or "local")


def actor_options(**options: Any) -> dict[str, Any]:
    """Ray actor options: never restarted by Ray (the cluster retries work itself), never
    retried by Ray (a retry is decided, counted and reported here), the checkout on the path."""
    from cudaenv.rollout.ray_pool import worker_runtime_env

    out: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0, **options}
    runtime_env = worker_runtime_env()
    if runtime_env and "runtime_env" not in out:
        out["runtime_env"] = runtime_env
    return out


def on_this_node() -> Any:
    """A scheduling strategy that pins an actor to the driver's node (the service's queue
    and baseline store live with the driver: they must outlive any worker node)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray().get_runtime_context().get_node_id()
    return NodeAffinitySchedulingStrategy(node_id=node, soft=False)


def died(exc: BaseException) -> bool:
    """Whether ``exc`` says the actor (its process or its node) is gone, not that a call failed."""
    r = ray()
    gone = (r.exceptions.RayActorError, r.exceptions.WorkerCrashedError)
    unavailable = getattr(r.exceptions, "ActorUnavailableError", None)
    if unavailable is not None:
        gone = (*gone, unavailable)
    return isinstance(exc, gone)


def kill(actor: Any) -> None:
    """Kill ``actor`` if it is still there."""
    try:
        ray().kill(actor, no_restart=True)
    except Exception:  # already gone
        return
