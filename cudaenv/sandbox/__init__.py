"""Sandboxes: where agent commands and grading stages run.

Callers outside this package use only what is exported here (and the ``Sandbox`` contract's
public methods and attributes): no module outside ``cudaenv.sandbox`` imports a backend module
or branches on a backend's name.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from cudaenv.errors import SpecError
from cudaenv.sandbox._owners import Owner, boot_id, proc_start
from cudaenv.sandbox._strays import pid_alive
from cudaenv.sandbox.base import ExecResult, Sandbox, SandboxLimits
from cudaenv.sandbox.options import DockerOptions, LocalOptions, SandboxOptions, spec_error
from cudaenv.sandbox.pool import NewSandboxes, SandboxPool

__all__ = [
    "BACKENDS",
    "POOLS",
    "DockerOptions",
    "ExecResult",
    "LocalOptions",
    "Owner",
    "Sandbox",
    "SandboxLimits",
    "SandboxOptions",
    "SandboxPool",
    "boot_id",
    "check_isolation",
    "gpu_access",
    "make_pool",
    "make_sandbox",
    "pid_alive",
    "preflight",
    "proc_start",
    "reap_orphans",
    "sandbox_options",
]

#: backend name -> "module:class" (imported on first use)
BACKENDS: dict[str, str] = {
    "local": "cudaenv.sandbox.local:LocalSandbox",
    "docker": "cudaenv.sandbox.docker:DockerSandbox",
}

#: backend name -> "module:class" of its warm pool; a backend not named here gets
#: :class:`NewSandboxes` (a new sandbox per acquire)
POOLS: dict[str, str] = {
    "docker": "cudaenv.sandbox.docker_pool:DockerSandboxPool",
}


def _target(backend: str) -> str:
    target = BACKENDS.get(backend) if isinstance(backend, str) else None
    if target is None:
        names = ", ".join(repr(n) for n in BACKENDS)
        raise SpecError(f"unknown sandbox backend {backend!r}; choose {names}", field="sandbox")
    return target


def _backend_class(backend: str) -> type[Sandbox]:
    module, _, name = _target(backend).partition(":")
    return getattr(importlib.import_module(module), name)


def make_sandbox(backend: str | SandboxOptions = "local", **options: Any) -> Sandbox:
    """Create a sandbox by backend name (a key of :data:`BACKENDS`) and its options; or from
    a :data:`SandboxOptions` model (``options`` then override its fields)."""
    if isinstance(backend, BaseModel):
        options = {**backend.as_kwargs(), **options}
        backend = backend.backend
    return _backend_class(backend)(**options)


def make_pool(backend: str, size: int = 4, **options: Any) -> SandboxPool:
    """A pool of fresh sandboxes of a backend (its options as for :func:`make_sandbox`):
    ``size`` started ahead where the backend keeps a warm pool, else a new one per acquire.
    Every sandbox it lends is new (nothing ran in it before), so an agent's and a grader's
    sandboxes may come from one pool."""
    _target(backend)
    if backend in POOLS:
        module, _, name = POOLS[backend].partition(":")
        pool: SandboxPool = getattr(importlib.import_module(module), name)(size=size, **options)
        return pool
    opts = sandbox_options(backend, options)
    return NewSandboxes(lambda: make_sandbox(opts), size)


_OPTIONS: TypeAdapter[SandboxOptions] = TypeAdapter(SandboxOptions)


def sandbox_options(
    backend: str, options: Mapping[str, Any] | SandboxOptions | None = None
) -> SandboxOptions:
    """Validate a backend's options (without making a sandbox): the backend's model, or a
    :class:`cudaenv.errors.SpecError` naming the bad field (``image`` for a local sandbox, an
    unknown ``isolation``, a negative ``limits.memory_mb``...) or the unknown backend."""
    _target(backend)
    if isinstance(options, BaseModel):
        if options.backend == backend:
            return options
        options = options.model_dump(exclude_unset=True, exclude={"backend"})
    if not isinstance(options, Mapping | None):
        raise SpecError(f"sandbox options must be a mapping, not {options!r}", field="options")
    data = dict(options or {})
    if data.setdefault("backend", backend) != backend:
        raise SpecError(
            f"options for the {data['backend']!r} sandbox given for {backend!r}", field="backend"
        )
    try:
        return _OPTIONS.validate_python(data)
    except ValidationError as exc:
        raise spec_error(exc, backend) from exc


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


def preflight(backend: str, **options: Any) -> None:
    """Check that sandboxes of ``backend`` with ``options`` can start here, without making
    one (:meth:`Sandbox.preflight`: e.g. the Docker engine answers and has the image);
    SandboxError saying what is missing."""
    _backend_class(backend).preflight(options)


def gpu_access(backend: str, **options: Any) -> bool:
    """Whether sandboxes made with these options would see the host's GPUs, without making
    one (a container sees none unless it requests devices)."""
    return _backend_class(backend).gpu_access_for(options)
