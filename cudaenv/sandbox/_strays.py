"""Which processes of a local sandbox are not its own machinery (leftovers of a command).

Why: the grader kills a solution's whole sandbox right after each of its runs, and a process
still alive at that moment is a suspected hack (a ``setsid`` busy loop left to slow the
baseline's timed runs). The sandbox's own processes are the supervisor and the forks of it
(its slots), which keep the supervisor's command line, and under bubblewrap its reaper (a fork
of bwrap); anything else in the sandbox's cgroup or pid namespace is a leftover.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _cmdline(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def pid_alive(pid: int) -> bool:
    """Whether host process ``pid`` exists and is not a zombie (an exited process not yet
    reaped is harmless). The one liveness check of the package: public as
    :func:`cudaenv.sandbox.pid_alive`."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1] not in ("Z", "X")
    except (OSError, IndexError):
        return False
    return False


def namespace_members(init_pid: int) -> set[int]:
    """Host pids in the pid namespace of ``init_pid`` (empty when it is gone)."""
    try:
        ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return set()
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/pid") == ns:
                    found.add(int(entry))
    return found


def strays(members: set[int], own: list[int]) -> list[int]:
    """The live ``members`` whose command line is none of the ``own`` processes'."""
    own_lines = {line for pid in own if (line := _cmdline(pid))}
    return sorted(
        pid
        for pid in members
        if pid not in own and _cmdline(pid) not in own_lines and pid_alive(pid)
    )


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still alive (not zombies)."""
    return [pid for pid in pids if pid_alive(pid)]
