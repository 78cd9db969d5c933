"""``areset``/``astep``: env calls offloaded from the event loop to one bounded thread pool.

A step is subprocess-bound (a command in the sandbox, a compile, a grading run), so a thread
per running call overlaps them well and the event loop only awaits a future. The pool is
shared by every env in the process and bounded, so hundreds of concurrent episodes queue for
a thread instead of starting hundreds of threads at once. ``asyncio.to_thread`` is not used:
its default executor (``min(32, cpus + 4)`` threads) is shared with the rest of the
application, and tool calls that wait minutes would starve its other users.

The bound is ``CUDAENV_ASYNC_THREADS`` (default 128), read when the pool is first used.
Cancelling an ``astep`` does not stop the step already running in its thread: the env is
closed as soon as that step returns, so a cancelled batch leaves no sandbox behind.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from cudaenv.errors import CudaEnvError, SpecError

ENV_VAR = "CUDAENV_ASYNC_THREADS"
DEFAULT_THREADS = 128
T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def async_threads() -> int:
    """The pool's bound: ``CUDAENV_ASYNC_THREADS`` or the default."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise SpecError(f"{ENV_VAR} must be a positive integer, got {raw!r}", field=ENV_VAR)
    return value


def executor() -> ThreadPoolExecutor:
    """The process-wide pool the async env methods run on (created on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(async_threads(), thread_name_prefix="cudaenv-async")
        return _pool


class Offloader:
    """Runs one env's calls on the pool, one at a time (an env is not thread-safe)."""

    def __init__(self, close: Callable[[], None]) -> None:
        self._close = close
        self._busy = False

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._busy:
            raise CudaEnvError("this env is already running a call; await it before the next")
        self._busy = True
        try:
            cf = executor().submit(fn, *args, **kwargs)
        except BaseException:
            self._busy = False
            raise
        cf.add_done_callback(lambda _f: setattr(self, "_busy", False))
        try:
            return await asyncio.shield(asyncio.wrap_future(cf))
        except asyncio.CancelledError:
            # the thread cannot be stopped: close the env once its call returns (in that thread)
            cf.add_done_callback(lambda _f: self._close())
            raise
