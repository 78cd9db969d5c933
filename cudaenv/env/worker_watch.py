"""Is a ``ProcessEnv`` worker alive, and answering? The owner's side of the liveness check.

Why: a worker's reader thread learns of its death only when the socket ends, and a stopped
(SIGSTOP) or wedged worker never ends it: every call to it would wait forever. So the owner
looks at the process itself: :class:`ProcessProbe` holds a pidfd (readable once the process
has exited, zombie or not) and reads its state from ``/proc`` (``T``/``t``: stopped). One
:class:`Watchdog` thread per pool checks every worker each :data:`INTERVAL_S`: one stopped for
:data:`STOPPED_GRACE_S` (a terminal's Ctrl-Z stops and resumes owner and workers together:
not a fault) is killed, and so is one with calls pending that has not answered a ping within
:data:`UNRESPONSIVE_S`. A killed worker fails its pending calls with
:class:`~cudaenv.errors.WorkerError` (its reader sees the socket end) and is replaced.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Protocol

__all__ = ["INTERVAL_S", "STOPPED_GRACE_S", "UNRESPONSIVE_S", "ProcessProbe", "Watchdog"]

INTERVAL_S = 0.5
STOPPED_GRACE_S = 2.0
UNRESPONSIVE_S = 60.0


class ProcessProbe:
    """Whether one process has exited or is stopped, without reaping it (the reader does)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        with contextlib.suppress(OSError, AttributeError):  # no pidfds: /proc alone
            self._fd = os.pidfd_open(pid)

    def state(self) -> str:
        """The process's state letter from ``/proc`` ("" when it is gone)."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                return fh.read().rsplit(b")", 1)[1].split()[0].decode()
        except (OSError, IndexError):
            return ""

    def exited(self) -> bool:
        if self._fd is not None:
            with contextlib.suppress(OSError, ValueError):
                return bool(select.select([self._fd], [], [], 0)[0])
        return self.state() in ("", "Z", "X")

    def stopped(self) -> bool:
        return self.state() in ("T", "t")

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class Watched(Protocol):
    """What the watchdog asks of a worker (:class:`~cudaenv.env.workers.Worker`)."""

    def check(self, now: float) -> None: ...


class Watchdog:
    """A daemon thread calling ``check(now)`` on each of ``workers()`` every :data:`INTERVAL_S`.

    It holds its owner weakly: when the pool is gone the thread ends.
    """

    def __init__(self, owner: object, workers: Callable[[object], Iterable[Watched]]) -> None:
        self._owner = weakref.ref(owner)
        self._workers = workers
        self._thread = threading.Thread(target=self._run, name="cudaenv-worker-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(INTERVAL_S)
            owner = self._owner()
            if owner is None:
                return
            for worker in self._workers(owner):
                worker.check(time.monotonic())
            del owner
