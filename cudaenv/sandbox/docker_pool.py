"""A warm pool of DockerSandbox containers: fresh ones started ahead, none ever lent twice.

Why: a cold container costs a few hundred ms, which matters when an RL run opens a sandbox
per episode and one or more per grading. Why never reuse one: whatever ran in a container
may have left something there that a reset from inside cannot be trusted to clear (processes
that escaped a kill, IPC objects, state in the image's writable places); a new container has
new pid, IPC, mount and network namespaces. So a released container is removed (in the
background) and a new one started in its place, and grading may draw from the same pool as
the agents: it never gets a container an agent used.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from types import TracebackType
from typing import Any

from cudaenv.errors import SandboxClosedError, SandboxError
from cudaenv.sandbox._container import Container
from cudaenv.sandbox._docker_engine import reap_orphans_once
from cudaenv.sandbox._docker_sandbox import DockerSandbox
from cudaenv.sandbox.options import EVAL_IMAGE, DockerOptions, validated

__all__ = ["DockerSandboxPool"]


class DockerSandboxPool:
    """Fresh containers started ahead; ``acquire()`` lends one, its ``close()`` (or
    ``release()``) gives it back, and the pool removes it and starts a new one.

    ``start()`` (or ``with``) first reaps orphans (:func:`reap_orphans_once`), then starts
    ``size`` containers. ``acquire()`` starts the pool if needed, lends an idle container if
    there is one, else starts one cold (it never waits for the background); each acquire and
    release tops the idle containers up to ``size`` in the background. A release returns at
    once: removing the container happens in the background too.
    """

    def __init__(self, image: str = EVAL_IMAGE, size: int = 4, **options: Any) -> None:
        pool = f"pool-{uuid.uuid4().hex[:8]}"
        self.options = validated(DockerOptions, {"image": image, "pool": pool, **options})
        self.size = size
        self._idle: deque[Container] = deque()
        self._lent: set[Container] = set()
        self._starting = 0
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def start(self) -> DockerSandboxPool:
        """Reap orphans of dead processes and start ``size`` containers (in parallel)."""
        with self._start_lock:
            if self._executor is not None:
                return self
            reap_orphans_once(self.options.base_url)
            self._executor = ThreadPoolExecutor(
                max_workers=max(2, min(self.size, 4)), thread_name_prefix="cudaenv-pool"
            )
            with self._lock:
                self._starting += self.size
            futures = [self._executor.submit(self._new_idle) for _ in range(self.size)]
            for fut in futures:
                fut.result()
        return self

    def _new_idle(self) -> None:
        """Start one container for the idle list (counted in ``_starting`` by the caller)."""
        try:
            box = Container.started(self.options)
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        with self._lock:
            self._starting -= 1
            if not self._closed:
                self._idle.append(box)
                return
        box.remove()

    def _top_up(self) -> None:
        """Start, in the background, as many containers as the idle list lacks."""
        with self._lock:
            if self._closed or self._executor is None:
                return
            need = self.size - len(self._idle) - self._starting
            self._starting += max(0, need)
        for _ in range(need):
            fut = self._executor.submit(self._new_idle)
            fut.add_done_callback(lambda f: f.exception())  # a failed start: acquire goes cold

    def acquire(self) -> DockerSandbox:
        """Lend a new sandbox: an idle container if any, else a cold start."""
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        self.start()
        with self._lock:
            box = self._idle.popleft() if self._idle else None
        if box is None:
            box = Container.started(self.options)
        with self._lock:
            self._lent.add(box)
        self._top_up()
        return DockerSandbox._wrap(box, self._retire)

    def release(self, sandbox: DockerSandbox) -> None:
        """Same as ``sandbox.close()``: the container is removed, a new one takes its place."""
        sandbox.close()

    def _retire(self, box: Container) -> None:
        """A lent container came back: remove it (in the background) and top up."""
        with self._lock:
            self._lent.discard(box)
            executor = None if self._closed else self._executor
        if executor is None:
            box.remove()
            return
        try:
            executor.submit(self._remove_quietly, box)
        except RuntimeError:  # the pool is closing: its executor takes no more work
            box.remove()
            return
        self._top_up()

    @staticmethod
    def _remove_quietly(box: Container) -> None:
        with suppress(SandboxError):
            box.remove()

    def close(self) -> None:
        """Remove every container of the pool, idle or lent; idempotent."""
        with self._lock:
            self._closed = True
            boxes = list(self._idle) + list(self._lent)
            self._idle.clear()
            self._lent.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)  # pending starts see _closed and remove theirs
        errors = []
        for box in boxes:
            try:
                box.remove()
            except SandboxError as exc:
                errors.append(str(exc))
        if errors:
            raise SandboxError("; ".join(errors))

    def __enter__(self) -> DockerSandboxPool:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
