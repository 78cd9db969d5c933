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
    ``size`` containers. ``acquire()`` starts the pool if needed and lends an idle container
    if there is one; else it waits for a container already starting in the background that no
    other caller waits for (never longer than a cold start), else starts one cold. Each
    acquire and release tops the idle containers up to ``size`` in the background. A release
    returns at once: the container is removed in the background (apart from the starts, so
    removals never delay them).
    """

    def __init__(self, image: str = EVAL_IMAGE, size: int = 4, **options: Any) -> None:
        pool = f"pool-{uuid.uuid4().hex[:8]}"
        self.options = validated(DockerOptions, {"image": image, "pool": pool, **options})
        self.size = size
        self._idle: deque[Container] = deque()
        self._lent: set[Container] = set()
        self._starting = 0  # background starts in flight
        self._waiting = 0  # acquirers waiting for one of them
        self._lock = threading.Condition()
        self._start_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._remover: ThreadPoolExecutor | None = None
        self._closed = False

    def start(self) -> DockerSandboxPool:
        """Reap orphans of dead processes and start ``size`` containers (in parallel)."""
        with self._start_lock:
            if self._executor is not None:
                return self
            reap_orphans_once(self.options.base_url)
            self._executor = ThreadPoolExecutor(
                max_workers=max(1, min(self.size, 4)), thread_name_prefix="cudaenv-pool-start"
            )
            self._remover = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cudaenv-pool-rm")
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
                self._lock.notify_all()  # a waiter may now have to start its own
            raise
        with self._lock:
            self._starting -= 1
            self._lock.notify_all()
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
            try:
                fut = self._executor.submit(self._new_idle)
            except RuntimeError:  # closing: its executor takes no more work
                return
            fut.add_done_callback(lambda f: f.exception())  # a failed start: acquire goes cold

    def acquire(self) -> DockerSandbox:
        """Lend a new sandbox: an idle one, one starting that no one waits for, or a cold one."""
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        self.start()
        with self._lock:
            if not self._idle and self._starting > self._waiting:
                self._waiting += 1
                try:
                    while not (self._idle or self._closed) and self._starting >= self._waiting:
                        self._lock.wait()
                finally:
                    self._waiting -= 1
            box = self._idle.popleft() if self._idle else None
        if box is None and not self._closed:
            box = Container.started(self.options)
        with self._lock:
            closed = self._closed
            if not closed and box is not None:
                self._lent.add(box)
        if closed or box is None:
            if box is not None:
                box.remove()
            raise SandboxClosedError("the pool is closed")
        self._top_up()
        return DockerSandbox._wrap(box, self._retire)

    def release(self, sandbox: DockerSandbox) -> None:
        """Same as ``sandbox.close()``: the container is removed, a new one takes its place."""
        sandbox.close()

    def _retire(self, box: Container) -> None:
        """A lent container came back: remove it (in the background) and top up."""
        with self._lock:
            self._lent.discard(box)
            remover = None if self._closed else self._remover
        if remover is None:
            box.remove()
            return
        try:
            remover.submit(self._remove_quietly, box)
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
            self._lock.notify_all()
        for executor in (self._executor, self._remover):
            if executor is not None:  # pending starts see _closed and remove theirs
                executor.shutdown(wait=True)
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
