"""The host's side of the slot protocol: a running supervisor and one command through a slot.

The protocol itself (what the supervisor and its slots write) is described at
``_supervisor.SUPERVISOR``. Here: take an idle slot (or start one), make the command's two
output FIFOs, hand the request to the slot's runner, then read output and status until the
command ends, killing its process group at the deadline. Why apart from the sandbox: this is
the part that must survive ``kill -9 -1`` inside (a slot killed at any point is seen dead at
once and the command retried elsewhere, only if it never started), and it holds no reference
to the sandbox object, so the sandbox's finalizer can still stop it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from cudaenv.errors import SandboxClosedError, SandboxError
from cudaenv.sandbox._cgroups import CgroupSet
from cudaenv.sandbox._signals import pidfd_kill
from cudaenv.sandbox._supervisor import Capture, Slot, job_request, kill_marked
from cudaenv.sandbox.base import ExecResult

__all__ = ["HANDOVER_TIMEOUT_S", "Runtime", "readable"]

_CHUNK = 1 << 20
# control FIFOs: never through a symlink (a sandbox must not steer the host's opens)
_FIFO_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
# A slot whose runner never opens its request FIFO, though its reporter lives, is given up after
# this long and the command tried on a fresh slot (exec() makes three tries). A last resort for
# the unforeseen (a runner stopped with SIGSTOP...): a slot killed at any point, even before its
# reporter said anything, is seen dead at once (see ``_supervisor.SUPERVISOR``).
HANDOVER_TIMEOUT_S = 10.0


def readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` is readable within ``timeout_s``: poll, since select() refuses the fds
    above 1023 that a process with hundreds of sandboxes open hands out."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout_s * 1000))


@dataclass
class Runtime:
    """The running supervisor of one sandbox; owns no reference to the sandbox object.

    ``lock`` is the sandbox's (slots are taken and returned under it); ``closed`` says the
    sandbox was closed, so a command cut short by it raises SandboxClosedError.
    """

    proc: subprocess.Popen[bytes]
    stdin_fd: int
    live_fd: int
    pidfd: int | None
    cgroups: CgroupSet | None
    ctl: str
    counter: itertools.count[int]  # FIFO names, never reused (not even after a restart)
    lock: threading.RLock
    leftovers: list[int] = field(default_factory=list)
    idle: deque[Slot] = field(default_factory=deque)
    slots: list[Slot] = field(default_factory=list)
    dead: bool = False
    closed: bool = False
    init_pid: int | None = None  # the supervisor's host pid (PID 1 of the namespace)

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def stop(self, *, closing: bool, marker: str | None) -> None:
        """Kill the supervisor and everything it started; close our descriptors. ``marker``:
        the environment marker that finds the processes where no namespace or cgroup does."""
        self.closed, self.dead = closing, True
        if self.pidfd is not None:  # the namespace's PID 1: its death takes the namespace down
            with contextlib.suppress(OSError):
                pidfd_kill(self.pidfd, signal.SIGKILL)
        if self.cgroups is not None:
            self.cgroups.kill_all()
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if marker is not None and not (self.cgroups and self.cgroups.dirs):
            kill_marked(marker)
        if self.cgroups is not None:
            self.cgroups.remove()
        fds = (self.stdin_fd, self.live_fd, self.pidfd, *self.leftovers)
        for fd in (*fds, *(x.status_fd for x in self.slots)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.leftovers.clear()

    def open_slots(self, count: int) -> None:
        """Start ``count`` idle slots (used in turn, so back-to-back commands never wait for
        a fork)."""
        for _ in range(count):
            self.idle.append(self._new_slot())

    # ----------------------------------------------------------------- one command

    def run(
        self, command: str, workdir: str, env: dict[str, str], timeout: float, cap: int
    ) -> ExecResult | None:
        """One attempt on one slot; None when the slot died before starting the command."""
        seq = next(self.counter)
        slot = self._take_slot()
        fds: list[int] = []
        try:
            for kind in ("o", "e"):
                path = f"{self.ctl}/{seq}.{kind}"
                os.mkfifo(path, 0o600)
                fds.append(os.open(path, os.O_RDONLY | _FIFO_FLAGS))
                with contextlib.suppress(OSError, AttributeError):
                    fcntl.fcntl(fds[-1], fcntl.F_SETPIPE_SZ, _CHUNK)
            start = time.monotonic()
            request = job_request(seq, workdir, command, env)
            if not self._hand_over(slot, request, start + HANDOVER_TIMEOUT_S):
                return None
            return self._collect(slot, seq, fds, start, timeout, cap)
        finally:
            self._release_slot(slot)
            for kind in ("o", "e"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{self.ctl}/{seq}.{kind}")
            for fd in fds:
                if fd not in self.leftovers:
                    os.close(fd)

    def drain_leftovers(self) -> None:
        """Discard what background processes wrote since; close pipes nobody holds any more."""
        with self.lock:
            for fd in list(self.leftovers):
                if _drain(fd, None, 0.01):
                    self.leftovers.remove(fd)
                    os.close(fd)

    # ----------------------------------------------------------------------- slots

    def _new_slot(self) -> Slot:
        """Start a worker slot (its FIFOs are made here, before the supervisor opens them)."""
        key = next(self.counter)
        os.mkfifo(f"{self.ctl}/{key}.w", 0o600)
        os.mkfifo(f"{self.ctl}/{key}.s", 0o600)
        slot = Slot(key, os.open(f"{self.ctl}/{key}.s", os.O_RDONLY | _FIFO_FLAGS))
        self.slots.append(slot)
        self._send(f"_slot {key}\n".encode())
        return slot

    def _take_slot(self) -> Slot:
        """The slot idle the longest (its runner is most likely forked by now), or a new one."""
        with self.lock:
            while self.idle:
                slot = self.idle.popleft()
                if not _slot_gone(slot):
                    return slot
                self._release_slot(slot)
            return self._new_slot()

    def _release_slot(self, slot: Slot) -> None:
        with self.lock:
            if not slot.dead:
                self.idle.append(slot)
            elif slot in self.slots:
                self.slots.remove(slot)
                os.close(slot.status_fd)

    def _hand_over(self, slot: Slot, request: bytes, deadline: float) -> bool:
        """Write the request to the slot's runner, waiting for it if it is still forking.

        False when the slot turns out to be dead (its reporter or runner was killed), or, as a
        last resort, when its runner has not opened the FIFO by ``deadline``.
        """
        path = f"{self.ctl}/{slot.key}.w"
        while True:
            try:
                fd = os.open(path, os.O_WRONLY | _FIFO_FLAGS)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                    slot.dead = True
                    raise SandboxError(f"cannot reach the sandbox worker: {exc}") from exc
            if not self.alive() or readable(self.live_fd, 0):
                self.dead = True
                raise self._dead_error()
            if _slot_gone(slot):
                return False
            if time.monotonic() > deadline:  # alive, yet no runner: retire it, try a fresh one
                slot.dead = True
                return False
            time.sleep(0.0002)
        try:
            os.set_blocking(fd, True)
            view = memoryview(request)
            while view:
                view = view[os.write(fd, view) :]
        except BrokenPipeError:  # the runner died after the open (a ``kill -9 -1`` just done)
            return False  # before it read the request to its end, so before it ran it
        except OSError as exc:
            slot.dead = True
            raise SandboxError(f"cannot reach the sandbox worker: {exc}") from exc
        finally:
            os.close(fd)
        return True

    def _send(self, data: bytes) -> None:
        """A line to the supervisor itself."""
        with self.lock:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.stdin_fd, view) :]
            except OSError as exc:
                self.dead = True
                raise self._dead_error() from exc

    def _dead_error(self) -> SandboxError:
        if self.closed:
            return SandboxClosedError("the sandbox was closed while a command ran")
        return SandboxError("the sandbox supervisor died")

    def _collect(
        self, slot: Slot, seq: int, fds: list[int], start: float, timeout: float, cap: int
    ) -> ExecResult | None:
        """Read output and status until the command ends; kill its group at the deadline.

        None if the slot died before its runner took the command ("j SEQ"): it never ran.
        """
        out_fd, err_fd = fds
        caps = {fd: Capture(cap) for fd in fds}
        poller = select.poll()
        for fd in (slot.status_fd, *fds):
            poller.register(fd, select.POLLIN)
        poller.register(self.live_fd, 0)  # POLLHUP only: the supervisor died
        code: int | None = None
        open_outputs = {out_fd, err_fd}
        timed_out = killed = False
        deadline = start + timeout
        while code is None and not slot.dead:
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out, deadline = True, now + 5.0
            if timed_out and slot.pgid is not None and not killed:
                killed = True
                self._send(f"kill -9 -- -{slot.pgid}\n".encode())
            if timed_out and now >= deadline:
                slot.dead = True  # it would not die: retire the slot
                break
            for fd, _ in poller.poll(max(0.0, deadline - now) * 1000 + 1):
                if fd == self.live_fd:
                    self.dead = True
                    raise self._dead_error()
                try:
                    data = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if fd == slot.status_fd:
                    if not data:
                        slot.dead = True
                    elif code is None:
                        code = slot.parse(data)
                elif data:
                    caps[fd].feed(data)
                else:
                    open_outputs.discard(fd)
                    poller.unregister(fd)
        duration = time.monotonic() - start
        if slot.dead and code is None and not timed_out and slot.job != seq:
            return None
        for fd in list(open_outputs):  # what the command wrote is in the pipe: drain it
            if _drain(fd, caps[fd]):
                open_outputs.discard(fd)
        self.leftovers.extend(open_outputs)  # a background process still holds them
        stdout, trunc_out = caps[out_fd].text()
        stderr, trunc_err = caps[err_fd].text()
        if code is None and not timed_out:
            code = 137  # the reporter was killed (e.g. ``kill -9 -1``)
        return ExecResult(
            exit_code=None if timed_out else code,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            truncated=trunc_out or trunc_err,
        )


def _slot_gone(slot: Slot) -> bool:
    """Read the slot's status FIFO; True (and marked dead) if its reporter has died."""
    try:
        while data := os.read(slot.status_fd, _CHUNK):
            slot.parse(data)  # "s"; or the "r" of a runner that died idle, ignored
    except BlockingIOError:
        return False
    # End of file: after "s", the reporter died (``kill -9 -1``); before it, the
    # supervisor has not started the slot yet (it has no writer so far).
    slot.dead = slot.announced
    return slot.dead


def _drain(fd: int, cap: Capture | None, budget_s: float = 0.05) -> bool:
    """Read what is buffered (bounded in time); True at end of file."""
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        try:
            data = os.read(fd, _CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not data:
            return True
        if cap is not None:
            cap.feed(data)
    return False
