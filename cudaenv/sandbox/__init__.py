"""Sandboxes: where agent commands and grading stages run."""

from __future__ import annotations

from typing import Any

from cudaenv.sandbox.base import ExecResult, Sandbox, SandboxLimits

__all__ = ["ExecResult", "Sandbox", "SandboxLimits", "make_sandbox"]


def make_sandbox(backend: str = "local", **options: Any) -> Sandbox:
    """Create a sandbox by backend name: ``"local"`` (process sandbox) or ``"docker"``."""
    from cudaenv.errors import SpecError

    if backend == "local":
        from cudaenv.sandbox.local import LocalSandbox

        return LocalSandbox(**options)
    if backend == "docker":
        from cudaenv.sandbox.docker import DockerSandbox

        return DockerSandbox(**options)
    raise SpecError(
        f"unknown sandbox backend {backend!r}; choose 'local' or 'docker'", field="sandbox"
    )
