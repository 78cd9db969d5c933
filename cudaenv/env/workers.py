"""The worker processes :class:`~cudaenv.env.process_env.ProcessEnv` runs episodes in.

Why processes: a thread-offloaded step (:mod:`cudaenv.env.aio`) runs Python between its
subprocesses, and the event loop waits for the GIL behind every pool thread doing so. Here
the loop's process only queues requests and reads replies: a sender and a reader thread per
worker, each blocked in a socket call almost all the time.

A worker is started with ``python -c`` (not ``multiprocessing``'s spawn, which re-runs the
trainer's main script in the child) and the owner's ``sys.path``; it dies with its owner,
stopped or not (:mod:`cudaenv.env.worker_main`, :mod:`cudaenv.env.worker_guard`). A worker
that dies fails its pending calls with :class:`~cudaenv.errors.WorkerError` and is replaced
for new episodes; one that is stopped or stops answering is killed first
(:mod:`cudaenv.env.worker_watch`), and a new episode never goes to a worker whose process has
exited, even before its reader has noticed. Its bound is
``CUDAENV_PROCESS_WORKERS`` (default: one per CPU, 2 to 16), each running
``ceil(async threads / workers)`` calls at once, so the whole pool runs as many calls as the
thread pool would (``CUDAENV_ASYNC_THREADS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import pickle
import queue
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from cudaenv.env import worker_watch
from cudaenv.env.aio import async_threads, positive_int_env, process_cpus
from cudaenv.env.worker_main import PONG
from cudaenv.env.worker_watch import ProcessProbe, Watchdog
from cudaenv.errors import WorkerError

__all__ = ["ENV_VAR", "WorkerPool", "process_workers", "worker_pool"]

ENV_VAR = "CUDAENV_PROCESS_WORKERS"
MIN_DEFAULT_WORKERS = 2
MAX_DEFAULT_WORKERS = 16
_PATH_VAR = "CUDAENV_WORKER_SYS_PATH"
_BOOT = (
    "import json, os, sys\n"
    f"sys.path[:] = json.loads(os.environ.pop({_PATH_VAR!r}))\n"
    "from cudaenv.env.worker_main import serve\n"
    "serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))\n"
)
Reply = tuple[bool, Any, Any]


def process_workers() -> int:
    """The pool's size: ``CUDAENV_PROCESS_WORKERS`` or one per CPU (2 to 16)."""
    return positive_int_env(
        ENV_VAR, lambda: min(MAX_DEFAULT_WORKERS, max(MIN_DEFAULT_WORKERS, process_cpus()))
    )


class Worker:
    """One worker process: its requests go out on a sender thread, replies come back on a
    reader thread that resolves each call's asyncio future on the loop that awaits it."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.envs = 0  # episodes placed here and not dropped
        self.alive = True
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._outbox: queue.SimpleQueue[list[tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._batch: list[tuple[Any, ...]] = []
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Reply]]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._probe: ProcessProbe | None = None
        self._death: str | None = None  # why the watchdog killed it
        self._stopped_since: float | None = None
        self._ping_at: float | None = None  # when the unanswered ping went out
        threading.Thread(target=self._send_loop, name="cudaenv-worker-send", daemon=True).start()

    # liveness ------------------------------------------------------------------------
    def usable(self) -> bool:
        """Alive, its process not exited, and not seen stopped by the watchdog (a pidfd
        check, no ``/proc`` read: it runs on the event loop at every placement)."""
        return not self.exited() and self._stopped_since is None

    def exited(self) -> bool:
        """Its process has exited (known at once, before the reader sees the socket end)."""
        return not self.alive or (self._probe is not None and self._probe.exited())

    def check(self, now: float) -> None:
        """The watchdog's look (:mod:`cudaenv.env.worker_watch`): kill it when it has been
        stopped too long or leaves a ping unanswered while calls wait on it."""
        probe = self._probe
        if not self.alive or probe is None or probe.exited():
            return  # not started yet, or its reader fails what is pending
        if probe.stopped():
            self._stopped_since = self._stopped_since or now
            if now - self._stopped_since >= worker_watch.STOPPED_GRACE_S:
                self.kill(f"was stopped (SIGSTOP) for {worker_watch.STOPPED_GRACE_S:g} s")
            return
        self._stopped_since = None
        with self._lock:
            waiting = bool(self._pending)
        if not waiting:
            self._ping_at = None
        elif self._ping_at is None:
            self._ping_at = now
            self._outbox.put([("ping",)])
        elif now - self._ping_at >= worker_watch.UNRESPONSIVE_S:
            self.kill(f"did not answer a ping within {worker_watch.UNRESPONSIVE_S:g} s")

    def kill(self, why: str) -> None:
        """SIGKILL the process; its pending calls fail with WorkerError saying ``why``."""
        self._death = why
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    # the loop's side -----------------------------------------------------------------
    def call(self, env_id: int, rank: int, method: str, payload: bytes) -> asyncio.Future[Reply]:
        """Queue ``method`` of env ``env_id``; the future gets ``(ok, value, state)``."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Reply] = loop.create_future()
        with self._lock:
            if not self.alive:
                raise WorkerError(f"worker process {self.pid} is gone; its episodes are lost")
            call_id = next(self._ids)
            self._pending[call_id] = (loop, fut)
            self._batch.append(("call", call_id, env_id, rank, method, payload))
            if len(self._batch) == 1:
                loop.call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        """Hand the calls queued during one turn of the loop to the sender at once: hundreds
        of episodes started together wake it once, not once each."""
        with self._lock:
            batch, self._batch = self._batch, []
        if batch:
            self._outbox.put(batch)

    def drop(self, env_id: int, rank: int) -> None:
        """Close env ``env_id`` in the worker (its sandbox) and forget it; never blocks."""
        self.envs -= 1
        if self.alive:
            self._outbox.put([("drop", env_id, rank)])

    def stop(self) -> None:
        """Close the socket: the worker closes its envs and exits."""
        self._outbox.put(None)

    # the threads ---------------------------------------------------------------------
    def _start(self) -> Connection:
        ours, theirs = socket.socketpair()
        env = dict(os.environ, **{_PATH_VAR: json.dumps(sys.path)})
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _BOOT,
                    str(theirs.fileno()),
                    str(self.threads),
                    str(os.getpid()),
                ],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=_stderr_fd(),  # the owner's stdout may be a protocol (JSON lines, stdio)
                env=env,
            )
        finally:
            theirs.close()
        self.pid = self._proc.pid
        self._probe = ProcessProbe(self.pid)
        return Connection(ours.detach())

    def _send_loop(self) -> None:
        try:
            self._conn = self._start()
        except OSError as exc:
            self._fail(f"could not start a worker process: {exc}")
            return
        threading.Thread(target=self._read_loop, name="cudaenv-worker-read", daemon=True).start()
        while (item := self._outbox.get()) is not None:
            try:
                self._conn.send(item)
            except OSError:
                break  # the reader sees the end and fails what is pending
        with contextlib.suppress(OSError):
            self._conn.close()

    def _read_loop(self) -> None:
        assert self._conn is not None and self._proc is not None
        while True:
            try:
                call_id, data = self._conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError, TypeError, ValueError):
                break  # TypeError/ValueError: the sender closed the connection under us (stop)
            if call_id == PONG:
                self._ping_at = None
                continue
            try:
                reply: Reply = pickle.loads(data)
            except Exception as exc:  # a class the owner cannot import, a truncated reply
                reply = (False, WorkerError(f"a worker's reply could not be read: {exc}"), None)
            with self._lock:
                entry = self._pending.pop(call_id, None)
            if entry is not None:
                _resolve(entry, reply)
        code = self._proc.wait()
        how = self._death or f"exited (status {code})"
        self._fail(f"worker process {self.pid} {how}; its episodes are lost")
        if self._probe is not None:
            self._probe.close()

    def _fail(self, why: str) -> None:
        with self._lock:
            self.alive = False
            pending, self._pending = list(self._pending.values()), {}
        for entry in pending:
            _resolve(entry, (False, WorkerError(why), None))


def _stderr_fd() -> int:
    """Where a worker's stray prints go: the owner's stderr, else nowhere."""
    try:
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else subprocess.DEVNULL
    except (OSError, ValueError):
        return subprocess.DEVNULL


def _resolve(entry: tuple[asyncio.AbstractEventLoop, asyncio.Future[Reply]], reply: Reply) -> None:
    loop, fut = entry

    def settle() -> None:
        if not fut.done():
            fut.set_result(reply)

    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody awaits it
        loop.call_soon_threadsafe(settle)


class WorkerPool:
    """Up to ``size`` workers; an episode goes to the live worker holding the fewest."""

    def __init__(self, size: int, threads_each: int) -> None:
        self.size = size
        self.threads_each = threads_each
        self._workers: list[Worker] = []
        self._lock = threading.Lock()
        self._watchdog = Watchdog(self, lambda pool: pool.workers)  # type: ignore[attr-defined]

    @property
    def workers(self) -> list[Worker]:
        with self._lock:
            return list(self._workers)

    def place(self) -> Worker:
        """The worker a new episode lives in: the usable one holding the fewest. One whose
        process has exited is dropped at once (its reader may not know yet); one the watchdog
        saw stopped is passed over (and killed soon), a new one started in its stead."""
        with self._lock:
            self._workers = [w for w in self._workers if not w.exited()]
            usable = [w for w in self._workers if w.usable()]
            if len(self._workers) < self.size or not usable:
                usable.append(Worker(self.threads_each))
                self._workers.append(usable[-1])
            worker = min(usable, key=lambda w: w.envs)
            worker.envs += 1
            return worker

    def shutdown(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, []
        for w in workers:
            w.stop()


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def _forget_pool_in_child() -> None:
    """A forked child shares no worker with its parent: its envs start over in its own."""
    global _pool, _pool_lock
    if _pool is not None:
        for w in _pool._workers:  # their threads did not survive the fork
            w.alive = False
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def worker_pool() -> WorkerPool:
    """The process-wide pool (created on first use, sized then)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            size = process_workers()
            _pool = WorkerPool(size, max(1, math.ceil(async_threads() / size)))
        return _pool
