"""``DaemonPool``: worker threads that an interrupted run can abandon.

``ThreadPoolExecutor`` joins its threads at interpreter exit, so a Ctrl-C that stops a run
still waits for every running episode (and a second Ctrl-C then lets the exit handlers close
the sandboxes under threads that are still grading). These threads are daemons: abandoning
them is immediate, and what they would still produce is dropped by the caller (see
``_Recorder.seal`` in the runner), never stored half-done.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from cudaenv.sandbox.base import declare_workers

T = TypeVar("T")

_Item = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...]]


class DaemonPool:
    """A fixed set of daemon threads running submitted calls in order of submission."""

    def __init__(self, workers: int, name: str) -> None:
        declare_workers(workers)  # the sandboxes' default memory cap shares the host among them
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._loop, name=f"{name}_{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, fn, args = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # handed to whoever reads the future
                fut.set_exception(exc)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        fut: Future[T] = Future()
        self._queue.put((fut, fn, args))
        return fut

    def shutdown(self) -> None:
        """Cancel what has not started and let the threads end after their current call;
        returns at once (the running calls are abandoned, not awaited)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)
