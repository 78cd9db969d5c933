"""Sandboxes: where agent commands and grading stages run.

Callers outside this package use only what is exported here (and the ``Sandbox`` contract's
public methods and attributes): no module outside ``cudaenv.sandbox`` imports a backend module
or branches on a backend's name.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from cudaenv.sandbox.base import ExecResult, Sandbox, SandboxLimits

__all__ = [
    "BACKENDS",
    "ExecResult",
    "Sandbox",
    "SandboxLimits",
    "check_isolation",
    "gpu_access",
    "make_sandbox",
    "pid_alive",
    "reap_orphans",
]

#: backend name -> "module:class" (imported on first use)
BACKENDS: dict[str, str] = {
    "local": "cudaenv.sandbox.local:LocalSandbox",
    "docker": "cudaenv.sandbox.docker:DockerSandbox",
}


def _backend_class(backend: str) -> type[Sandbox]:
    from cudaenv.errors import SpecError

    target = BACKENDS.get(backend) if isinstance(backend, str) else None
    if target is None:
        names = ", ".join(repr(n) for n in BACKENDS)
        raise SpecError(f"unknown sandbox backend {backend!r}; choose {names}", field="sandbox")
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def make_sandbox(backend: str = "local", **options: Any) -> Sandbox:
    """Create a sandbox by backend name (a key of :data:`BACKENDS`)."""
    return _backend_class(backend)(**options)


def check_isolation(isolation: str = "bubblewrap") -> None:
    """Raise :class:`cudaenv.errors.IsolationUnavailableError` (one line saying why) when
    local sandboxes with this isolation cannot be made on this host."""
    from cudaenv.sandbox.local import check_isolation as check

    check(isolation)


def reap_orphans() -> None:
    """Remove every backend's sandboxes whose owner process is gone (a backend that cannot be
    reached, e.g. no Docker engine, has nothing of ours to reap)."""
    from cudaenv.sandbox.local import sweep_stale_sandboxes

    sweep_stale_sandboxes()
    with contextlib.suppress(Exception):
        from cudaenv.sandbox.docker import reap_orphans as reap_containers

        reap_containers()


def gpu_access(backend: str, **options: Any) -> bool:
    """Whether sandboxes made with these options would see the host's GPUs, without making
    one (a container sees none unless it requests devices)."""
    return _backend_class(backend).gpu_access_for(options)


def pid_alive(pid: int) -> bool:
    """Whether host process ``pid`` exists and is not a zombie."""
    from cudaenv.sandbox._strays import alive

    return bool(alive([pid]))
