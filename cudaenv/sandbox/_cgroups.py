"""Per-sandbox cgroups of the local sandbox (pids and memory), where the host lets us make them.

Why: RLIMIT_NPROC does not bind root and counts per user, and a memory rlimit is per process;
a cgroup caps the whole sandbox and finds every process in it, even those that left the
process tree (``setsid``), so killing a sandbox cannot miss one. Where no hierarchy is
writable (``cgroup_bases`` finds none) the sets stay empty and rlimits alone apply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from cudaenv.sandbox._signals import kill

__all__ = ["CgroupSet", "cgroup_bases", "cgroup_pids", "kill_cgroups", "remove_cgroups"]


class CgroupSet:
    """Per-sandbox cgroups (v1 ``pids`` and ``memory``, or v2), created under our own cgroup.

    Where they can be written (root in a container, a delegated subtree) they give a real
    process cap (RLIMIT_NPROC does not bind root, and counts per user elsewhere) and a memory cap
    for the whole sandbox, and let ``kill_all`` find every process, even those that left the
    process tree. Where they cannot, ``dirs`` is empty and rlimits alone apply.
    """

    def __init__(self, name: str, *, max_processes: int, memory_mb: int) -> None:
        self.dirs: list[Path] = []
        self.pids_limited = False
        self.memory_limited = False
        for base, files in cgroup_bases():
            path = base / name
            try:
                path.mkdir()
            except OSError:
                continue
            ok = True
            for key, value in files(max_processes, memory_mb).items():
                try:
                    (path / key).write_text(value)
                except OSError:
                    ok = False
            if not ok or not (path / "cgroup.procs").exists():
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.dirs.append(path)
            self.pids_limited |= any(k.startswith("pids") for k in files(1, 1))
            self.memory_limited |= any(k.startswith("memory") for k in files(1, 1))

    def add(self, pid: int) -> None:
        """Move ``pid`` (before it forks anything) into every cgroup of the set."""
        for path in self.dirs:
            with contextlib.suppress(OSError):
                (path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        return cgroup_pids(self.dirs)

    def oom_kills(self) -> int | None:
        """Processes the memory cgroup's limit killed (v1 ``memory.oom_control``, v2
        ``memory.events``: ``oom_kill N``); None without a memory cgroup."""
        if not self.memory_limited:
            return None
        total = 0
        for path in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError, ValueError):
                    for line in (path / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            total += int(value)
        return total

    def kill_all(self, deadline_s: float = 5.0) -> None:
        """SIGKILL every member until none is left (a fork bomb is bounded by pids.max)."""
        kill_cgroups(self.dirs, deadline_s)

    def remove(self) -> None:
        remove_cgroups(self.dirs)
        self.dirs = []


def cgroup_pids(dirs: list[Path]) -> set[int]:
    """The pids in the cgroups ``dirs`` (unreadable ones count as empty)."""
    found: set[int] = set()
    for path in dirs:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(x) for x in (path / "cgroup.procs").read_text().split())
    return found


def kill_cgroups(dirs: list[Path], deadline_s: float = 5.0) -> None:
    """SIGKILL every process in the cgroups ``dirs`` until none is left or ``deadline_s``
    passed (v2's ``cgroup.kill`` first; processes in their own sessions leave no tree)."""
    end = time.monotonic() + deadline_s
    while dirs and time.monotonic() < end:
        for path in dirs:
            kill_file = path / "cgroup.kill"
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
        pids = cgroup_pids(dirs)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def remove_cgroups(dirs: list[Path]) -> None:
    """Remove the cgroups ``dirs``, retrying while a killed member still holds one (it leaves
    its cgroup a moment after it dies); a cgroup already gone is fine."""
    for path in dirs:
        for _ in range(200):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)


def _v1_files(controller: str):  # type: ignore[no-untyped-def]
    def files(max_processes: int, memory_mb: int) -> dict[str, str]:
        if controller == "pids":
            return {"pids.max": str(max_processes)}
        return {"memory.limit_in_bytes": str(memory_mb * 1024 * 1024)}

    return files


def _v2_files(max_processes: int, memory_mb: int) -> dict[str, str]:
    return {"pids.max": str(max_processes), "memory.max": str(memory_mb * 1024 * 1024)}


def cgroup_bases():  # type: ignore[no-untyped-def]
    """(directory to create sandbox cgroups in, limit files) for each usable hierarchy."""
    root = Path("/sys/fs/cgroup")
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    own: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            own[c] = path.lstrip("/")
    bases = []
    if (root / "cgroup.controllers").exists():  # pure v2
        base = root / own.get("", "")
        enabled = (base / "cgroup.subtree_control").read_text() if base.is_dir() else ""
        if "pids" in enabled.split() and os.access(base, os.W_OK):
            bases.append((base, _v2_files))
        return bases
    for controller in ("pids", "memory"):
        base = root / controller / own.get(controller, "")
        if controller in own and base.is_dir() and os.access(base, os.W_OK):
            bases.append((base, _v1_files(controller)))
    return bases
