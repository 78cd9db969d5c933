"""Signals (SIGKILL, in practice) sent without holding the GIL.

Why: ``os.kill`` and ``signal.pidfd_send_signal`` keep the GIL through the system call, and
killing a namespace's PID 1 or a cgroup's members takes the kernel a fraction of a millisecond
each time. When sandboxes are closed on worker threads (the async env's pool,
``bench/bench_async.py``), the event loop sharing the process waited for every one of them.
A ctypes call releases the GIL around the foreign function, so the same system calls are made
through libc; where that is impossible (no libc to load) the standard functions are used.
"""

from __future__ import annotations

import ctypes
import os
import signal

__all__ = ["kill", "pidfd_kill"]

#: pidfd_send_signal's number in the unified system-call table (every Linux architecture
#: but alpha, which has no pidfd support in CPython either)
_SYS_PIDFD_SEND_SIGNAL = 424

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
    _libc.kill.argtypes = [ctypes.c_int, ctypes.c_int]
    _libc.kill.restype = ctypes.c_int
    _libc.syscall.restype = ctypes.c_long
except (OSError, AttributeError):  # pragma: no cover - a libc-less interpreter
    _libc = None


def _raise_errno() -> None:
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err))


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    """``os.kill`` without the GIL: same arguments, same ``OSError`` on failure."""
    if _libc is None:  # pragma: no cover
        os.kill(pid, sig)
    elif _libc.kill(pid, sig) != 0:
        _raise_errno()


def pidfd_kill(pidfd: int, sig: int = signal.SIGKILL) -> None:
    """``signal.pidfd_send_signal(pidfd, sig)`` without the GIL (``OSError`` on failure)."""
    if _libc is None:  # pragma: no cover
        signal.pidfd_send_signal(pidfd, sig)
        return
    args = (ctypes.c_int(pidfd), ctypes.c_int(sig), ctypes.c_void_p(None), ctypes.c_uint(0))
    if _libc.syscall(ctypes.c_long(_SYS_PIDFD_SEND_SIGNAL), *args) != 0:
        _raise_errno()
