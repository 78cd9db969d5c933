"""A ``ProcessEnv`` worker dies with its owner, even when it is stopped.

Why: the worker asks for SIGTERM when its owner dies (``PR_SET_PDEATHSIG``) and closes its
sandboxes on the way out, but a stopped process (SIGSTOP, state T) never acts on a SIGTERM:
it would outlive its owner for good, holding its sandboxes. So each worker, before it starts
any thread, forks a guardian that watches the owner and the worker by pidfd (no polling: it
sleeps in ``poll``). When the owner dies first, the guardian sends the worker SIGCONT and
SIGTERM (it wakes up and cleans up as usual), and SIGKILL if it is still there after
:data:`CLEANUP_GRACE_S`; when the worker dies first, the guardian just exits. The guardian
is forked twice (its parent exits at once), so it is nobody's child: it never shows among
the worker's processes and nothing has to reap it.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal

__all__ = ["CLEANUP_GRACE_S", "start_guardian"]

CLEANUP_GRACE_S = 60.0  # a woken worker's time to close its sandboxes before SIGKILL


def start_guardian(owner: int) -> bool:
    """Fork the guardian of this process (the worker) and its ``owner``; False where pidfds
    are missing (the parent-death signal alone then covers a running worker)."""
    worker = os.getpid()
    try:
        fds = (os.pidfd_open(owner), os.pidfd_open(worker))
    except (OSError, AttributeError):
        return False
    try:
        first = os.fork()
        if first == 0:
            try:
                if os.fork() == 0:
                    _guard(worker, *fds)
            finally:
                os._exit(0)
        os.waitpid(first, 0)  # the middle process exits at once: the guardian is orphaned
    finally:
        for fd in fds:
            os.close(fd)
    return True


def _guard(worker: int, owner_fd: int, worker_fd: int) -> None:
    """The guardian's life: wait for either to die; when it is the owner, end the worker."""
    try:
        _keep_only(owner_fd, worker_fd)  # the worker's socket above all: its end must end
        os.setsid()  # out of the worker's session and process group: no signal meant for it
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        poller = select.poll()
        poller.register(owner_fd, select.POLLIN)
        poller.register(worker_fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        if worker_fd in ready:
            return  # the worker went first (a normal exit): nothing to do
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGCONT)  # a stopped worker resumes and takes its SIGTERM
            os.kill(worker, signal.SIGTERM)
        if not select.select([worker_fd], [], [], CLEANUP_GRACE_S)[0]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)
    except BaseException:  # nothing to report to: the guardian only exits
        pass


def _keep_only(*keep: int) -> None:
    """Close every inherited descriptor but ``keep`` (stdio goes to /dev/null): a copy of the
    worker's socket held here would hide the worker's death from its owner."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    bounds = sorted({*keep, devnull})
    start = 3
    for fd in bounds:
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))
    if devnull > 2 and devnull not in keep:
        os.close(devnull)
