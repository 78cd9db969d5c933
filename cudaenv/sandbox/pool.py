"""Pools of sandboxes for any backend: what :func:`cudaenv.sandbox.make_pool` returns.

Why: an RL run opens a sandbox per episode and one or more per grading. A backend whose
sandboxes are slow to start (a container) keeps some started ahead; one whose sandboxes cost
little (local) makes a new one per ``acquire``. Either way every ``acquire`` lends a sandbox
nothing ran in before (``Sandbox.fresh``): agents and graders may share one pool.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Protocol

from cudaenv.errors import SandboxClosedError
from cudaenv.sandbox.base import Sandbox

__all__ = ["NewSandboxes", "SandboxPool"]


class SandboxPool(Protocol):
    """``acquire()`` lends a fresh sandbox (its ``close()`` gives it back); ``close()`` ends
    the pool and everything it lent; a context manager."""

    def acquire(self) -> Sandbox: ...

    def close(self) -> None: ...

    def __enter__(self) -> SandboxPool: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class NewSandboxes:
    """The pool of a backend that keeps none warm: each ``acquire`` makes a new sandbox."""

    def __init__(self, make: Any, size: int = 0) -> None:
        self._make = make
        self.size = size
        self._closed = False

    def acquire(self) -> Sandbox:
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        sandbox: Sandbox = self._make()
        return sandbox

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> NewSandboxes:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
