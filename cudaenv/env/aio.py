"""``areset``/``astep``: env calls offloaded from the event loop to one bounded thread pool.

A step is subprocess-bound (a command in the sandbox, a compile, a grading run), so a thread
per running call overlaps them well and the event loop only awaits a future. The pool is
shared by every env in the process and bounded, so hundreds of concurrent episodes queue for
a thread instead of starting hundreds of threads at once. ``asyncio.to_thread`` is not used:
its default executor (``min(32, cpus + 4)`` threads) is shared with the rest of the
application, and tool calls that wait minutes would starve its other users.

The bound is ``CUDAENV_ASYNC_THREADS`` (default: 2 per CPU, 4 to 64), read when the pool is
first used; threads start as calls need them, and a free thread takes the oldest episode's
call first (so hundreds of gathered episodes do not all hold a sandbox at once). They are daemon threads (unlike ``ThreadPoolExecutor``'s,
which the interpreter joins at exit): a trainer stopped with Ctrl-C exits without waiting for
the steps still running, and the sandboxes' own exit handlers clean up after them. The pool
does not declare its bound to the sandboxes' memory default (``declare_workers``): with
many concurrent episodes, pass ``sandbox_options={"limits": ...}`` sized for them.
Cancelling an ``astep`` does not stop the step already running in its thread: the env is
closed as soon as that step returns, so a cancelled batch leaves no sandbox behind.
With hundreds of episodes in one loop, the pool threads' Python still holds the loop's GIL
between subprocesses: :class:`~cudaenv.env.process_env.ProcessEnv` moves the env into a
worker process instead.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from cudaenv.errors import CudaEnvError, SpecError

ENV_VAR = "CUDAENV_ASYNC_THREADS"
MAX_DEFAULT_THREADS = 64
MIN_DEFAULT_THREADS = 4
T = TypeVar("T")

_lock = threading.Lock()
_pool: DaemonExecutor | None = None


class DaemonExecutor:
    """At most ``bound`` daemon threads, started on demand, running the lowest-ranked call first.

    A call's rank is its episode's ticket (:meth:`Offloader.begin`): a thread that frees up
    takes the next step of the oldest episode before the reset of a new one. In submission
    order, 256 gathered episodes would all reset before any stepped: 256 sandboxes alive at
    once, each command slowed by the others' processes (measured: a third of the threaded
    runner's throughput, which never holds more sandboxes than threads).
    """

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._heap: list[tuple[int, int, Future[Any], Callable[[], Any]]] = []
        self._ready = threading.Condition(threading.Lock())
        self._seq = itertools.count()
        self._threads = 0
        self._idle = 0  # threads free to take the next call
        # Thread.start() blocks until the new thread runs: a starter thread pays that wait,
        # never the event loop that submits (on a loaded host a start can take 100s of ms)
        self._starts: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._starter: threading.Thread | None = None

    @property
    def threads(self) -> int:
        return self._threads

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run ``fn`` with a rank of its own (after every call already ranked)."""
        return self.submit_ranked(next_ticket(), fn, *args, **kwargs)

    def submit_ranked(
        self, rank: int, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> Future[T]:
        """Run ``fn`` before every queued call of a higher ``rank`` (equal ranks: in order)."""
        fut: Future[T] = Future()
        with self._ready:
            heapq.heappush(self._heap, (rank, next(self._seq), fut, lambda: fn(*args, **kwargs)))
            self._ready.notify()
            if self._idle:
                self._idle -= 1
            elif self._threads < self.bound:
                self._threads += 1
                self._starts.put(f"cudaenv-async_{self._threads}")
                if self._starter is None:
                    self._starter = threading.Thread(
                        target=self._start_workers, name="cudaenv-async-starter", daemon=True
                    )
                    self._starter.start()
        return fut

    def _start_workers(self) -> None:
        while True:
            name = self._starts.get()
            threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._heap:
                    self._ready.wait()
                *_, fut, call = heapq.heappop(self._heap)
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(call())
                except BaseException as exc:  # handed to whoever awaits the future
                    fut.set_exception(exc)
            del fut, call
            with self._ready:
                self._idle += 1


_tickets = itertools.count()


def next_ticket() -> int:
    """A rank after every one handed out so far (``next`` on a count is atomic under the GIL)."""
    return next(_tickets)


def default_threads(cpus: int | None = None) -> int:
    """2 threads per CPU, at least 4, at most 64 (``cpus``: this process's CPUs).

    Why so few: a step is mostly a subprocess (the GIL is free while it runs), but between
    subprocesses every running call executes Python, and the event loop waits for the GIL
    behind all the threads doing so: its worst stall grows with the threads, not the CPUs
    (one GIL for any number of cores). Measured on 2 CPUs with 256 trivial episodes
    (``bench/bench_async.py``): 16 threads, loop stall p99 50 ms; 4 threads, p99 9 ms; the
    same throughput (the threads mostly wait for the same two cores). Two per CPU still keep
    every core busy with compiles and tests; raise ``CUDAENV_ASYNC_THREADS`` for steps that
    mostly wait (commands sleeping on a network or a GPU lease).
    """
    if cpus is None:
        cpus = process_cpus()
    return min(MAX_DEFAULT_THREADS, max(MIN_DEFAULT_THREADS, 2 * cpus))


def process_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def positive_int_env(name: str, default: Callable[[], int]) -> int:
    """Environment variable ``name`` as a positive int (SpecError naming it if it is not),
    or ``default()`` when it is unset or blank."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default()
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise SpecError(f"{name} must be a positive integer, got {raw!r}", field=name)
    return value


def async_threads() -> int:
    """The pool's bound: ``CUDAENV_ASYNC_THREADS`` or :func:`default_threads`."""
    return positive_int_env(ENV_VAR, default_threads)


def executor() -> DaemonExecutor:
    """The process-wide pool the async env methods run on (created on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = DaemonExecutor(async_threads())
        return _pool


class Offloader:
    """Runs one env's calls on the pool, one at a time (an env is not thread-safe).

    Its calls carry the env's ticket, taken by :meth:`begin` (a reset: a new episode) or by
    the first call: older episodes' calls go first (:class:`DaemonExecutor`).
    """

    def __init__(self, close: Callable[[], None]) -> None:
        # a bound method of the env is held weakly: env -> offloader -> env.close would be a
        # cycle, and every finished episode (its trajectory, verdict, steps) would then wait
        # for the cyclic garbage collector, whose full passes stall the event loop
        self._close_ref: Callable[[], Callable[[], None] | None] = (
            weakref.WeakMethod(close) if inspect.ismethod(close) else lambda: close
        )
        self._busy = False
        self._ticket: int | None = None

    def _close_env(self) -> None:
        close = self._close_ref()
        if close is not None:
            close()

    async def begin(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`run` for the first call of a new episode: it queues behind the older ones."""
        if not self._busy:
            self._ticket = next_ticket()
        return await self.run(fn, *args, **kwargs)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._busy:
            raise CudaEnvError("this env is already running a call; await it before the next")
        self._busy = True
        if self._ticket is None:
            self._ticket = next_ticket()
        try:
            cf = executor().submit_ranked(self._ticket, fn, *args, **kwargs)
        except BaseException:
            self._busy = False
            raise
        cf.add_done_callback(lambda _f: setattr(self, "_busy", False))
        try:
            return await asyncio.shield(asyncio.wrap_future(cf))
        except asyncio.CancelledError:
            # the thread cannot be stopped: close the env once its call returns (in that thread)
            cf.add_done_callback(lambda _f: self._close_env())
            raise
