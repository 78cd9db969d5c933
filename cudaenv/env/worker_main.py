"""The worker process behind :class:`~cudaenv.env.process_env.ProcessEnv`.

It holds envs by id and runs their calls on its own bounded thread pool (the oldest episode's
call first, as :class:`~cudaenv.env.aio.DaemonExecutor` does in the trainer's process), so
the Python an episode runs between its subprocesses holds this process's GIL, never the
event loop's. Each reply carries the call's result and what changed in the env (new
messages, new steps, the trajectory when it is new or final), so the loop's side mirrors the
env without copying a growing trajectory at every step.

The protocol, over one socket (``multiprocessing.connection`` framing): lists of requests
``("call", call_id, env_id, rank, method, payload)`` and ``("drop", env_id, rank)``;
``payload`` is a pickle of ``(ctor, args, kwargs)`` (``ctor``: the env's constructor
arguments, sent with its first call), unpickled here so a bad one fails its call, not the
worker; replies ``(call_id, pickle of (ok, value, state))``. ``("ping",)`` is answered at
once by the receiving thread with ``(PONG, b"")``: the owner's liveness check
(:mod:`cudaenv.env.worker_watch`). The worker exits when the socket closes (its owner exited)
or its owner dies (``PR_SET_PDEATHSIG``, and a guardian that also wakes a stopped worker:
:mod:`cudaenv.env.worker_guard`), closing its envs' sandboxes on the way out.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from cudaenv.env.aio import DaemonExecutor
from cudaenv.env.worker_guard import start_guardian
from cudaenv.errors import CudaEnvError, SpecError

__all__ = ["PONG", "EnvState", "serve"]

PONG = -1  # the call id of a reply to a ping
PR_SET_PDEATHSIG = 1
# the methods a ProcessEnv may call (anything else is refused before it reaches an env)
METHODS = frozenset({"reset", "step", "submit", "close"})


@dataclass
class EnvState:
    """What changed in an env since its last reply (applied by the loop's side)."""

    done: bool
    mode: str
    problem: Any = None  # the Problem when it changed (a reset to another task)
    instruction: Any = None  # the Instruction when it changed (every reset)
    trajectory: Any = None  # the whole Trajectory: new (a reset) or final
    head: Any = None  # else the trajectory without its steps, and the steps it gained
    new_steps: list[Any] = field(default_factory=list)
    messages: list[Any] | None = None  # all of them when the list is new, else None
    new_messages: list[Any] = field(default_factory=list)


@dataclass
class _Hosted:
    """An env and what its owner has seen of it."""

    env: Any
    task_id: str | None = None
    instruction: Any = None
    trajectory: Any = None
    steps: int = 0
    final: bool = False  # the ended episode's trajectory was sent (it changes no more)
    messages: Any = None
    n_messages: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)  # one call at a time

    def state(self) -> EnvState:
        env = self.env
        out = EnvState(done=env._done, mode=env.mode)
        if env.problem.task_id != self.task_id:
            out.problem, self.task_id = env.problem, env.problem.task_id
        if env._instruction is not self.instruction:
            out.instruction = self.instruction = env._instruction
        traj = env.trajectory
        if traj is not None and (traj is not self.trajectory or (env._done and not self.final)):
            out.trajectory = traj  # pickled with the result: the same object as info's
        elif traj is not None and not self.final:
            out.head = traj.model_copy(update={"steps": []})
            out.new_steps = traj.steps[self.steps :]
        self.final = traj is not None and env._done
        self.trajectory = traj
        self.steps = len(traj.steps) if traj is not None else 0
        msgs = env._messages
        if msgs is not self.messages:
            out.messages = list(msgs)
        else:
            out.new_messages = msgs[self.n_messages :]
        self.messages, self.n_messages = msgs, len(msgs)
        return out


def _die_with_parent(parent: int) -> None:
    """SIGTERM when the owner dies (Linux); exit now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        sys.exit(0)


def _encode(ok: bool, value: Any, state: EnvState | None) -> bytes:
    """The reply's pickle; a result or an error that does not pickle becomes a CudaEnvError."""
    try:
        data = pickle.dumps((ok, value, state), protocol=pickle.HIGHEST_PROTOCOL)
        if not ok:
            pickle.loads(data)  # an exception whose class cannot be rebuilt from its args
        return data
    except Exception as exc:
        what = f"{type(value).__name__}: {value}" if not ok else f"the result ({exc})"
        err = CudaEnvError(f"a worker's reply could not be sent back: {what}")
        return pickle.dumps((False, err, state), protocol=pickle.HIGHEST_PROTOCOL)


class _Server:
    def __init__(self, conn: Connection, threads: int) -> None:
        self.conn = conn
        self.pool = DaemonExecutor(threads)
        self.envs: dict[int, _Hosted] = {}
        self.dropped: set[int] = set()  # dropped before their first call built them
        self.send_lock = threading.Lock()
        self.envs_lock = threading.Lock()

    def reply(self, call_id: int, data: bytes) -> None:
        with self.send_lock, contextlib.suppress(OSError):  # the owner is gone: nobody to tell
            self.conn.send((call_id, data))

    def call(self, call_id: int, env_id: int, method: str, payload: bytes) -> None:
        hosted: _Hosted | None = None
        try:
            if method not in METHODS:
                raise CudaEnvError(f"a worker refuses the method {method!r}")
            try:
                ctor, args, kwargs = pickle.loads(payload)
                if ctor is not None:  # pickled by the owner at construction; the problem
                    problem, options = pickle.loads(ctor)  # once per problem object
                    ctor = (pickle.loads(problem), options)
            except Exception as exc:
                raise SpecError(
                    f"the worker could not unpickle the env's options or arguments ({exc}); "
                    "a sandbox factory or grader must be importable by name from a module",
                    field="env_options",
                ) from None
            with self.envs_lock:
                hosted = self.envs.get(env_id)
            if hosted is None:
                from cudaenv.env.core import CudaEnv

                if ctor is None:
                    raise CudaEnvError("this env is closed in its worker; reset it first")
                problem, options = ctor
                built = _Hosted(CudaEnv(problem, **options))
                with self.envs_lock:
                    closed = env_id in self.dropped  # its drop ran on another thread first
                    self.dropped.discard(env_id)
                    if not closed:
                        self.envs[env_id] = hosted = built
                if closed:
                    built.env.close()
                    raise CudaEnvError("this env was closed while its worker built it")
            with hosted.lock:
                value = getattr(hosted.env, method)(*args, **kwargs)
                data = _encode(True, value, hosted.state())
        except Exception as exc:
            state = None
            if hosted is not None:
                with hosted.lock, contextlib.suppress(Exception):
                    state = hosted.state()
            data = _encode(False, exc, state)
        self.reply(call_id, data)

    def drop(self, env_id: int) -> None:
        with self.envs_lock:
            hosted = self.envs.pop(env_id, None)
            if hosted is None:  # its first call may still be building it
                self.dropped.add(env_id)
        if hosted is not None:
            with hosted.lock, contextlib.suppress(Exception):  # after a call still running
                hosted.env.close()

    def run(self) -> None:
        while True:
            try:
                batch = self.conn.recv()
            except (EOFError, OSError):
                return
            for msg in batch:
                if msg[0] == "ping":
                    self.reply(PONG, b"")
                elif msg[0] == "call":
                    _, call_id, env_id, rank, method, payload = msg
                    self.pool.submit_ranked(rank, self.call, call_id, env_id, method, payload)
                elif msg[0] == "drop":
                    _, env_id, rank = msg
                    self.pool.submit_ranked(rank, self.drop, env_id)

    def close_all(self) -> None:
        with self.envs_lock:
            hosted, self.envs = list(self.envs.values()), {}
        for h in hosted:
            with contextlib.suppress(Exception):
                h.env.close()


def serve(fd: int, threads: int, parent: int) -> None:
    """The worker's main: serve requests on socket ``fd`` until it closes or the owner dies."""
    signal.signal(signal.SIGTERM, _exit_on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the owner, which exits
    _die_with_parent(parent)
    start_guardian(parent)  # before any thread starts: it forks
    server = _Server(Connection(fd), threads)
    try:
        server.run()
    finally:
        # the owner's exit closes the socket and (PR_SET_PDEATHSIG) sends SIGTERM: a second
        # exit must not cut the sandboxes' cleanup short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.close_all()


def _exit_on_term(signum: int, _frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signum)
