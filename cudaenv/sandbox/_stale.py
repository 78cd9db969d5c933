"""Cleaning up local sandboxes whose owner died without doing it (a SIGKILL, the OOM killer).

Why: such a sandbox keeps its directory, its workspace's tmpfs and its cgroups, and processes
in their own sessions keep running in it. Every sandbox directory and cgroup is named
``<owner pid>-<token>`` and the directory holds an ``owner`` file (pid, start time, boot id:
see ``_owners``), so the next process tells the dead owners' from the live ones'.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from cudaenv.sandbox import _cgroups
from cudaenv.sandbox._host import sandbox_parent, unmount
from cudaenv.sandbox._owners import Owner
from cudaenv.sandbox._supervisor import kill_marked, rmtree

__all__ = ["OWNER_FILE", "sweep_stale", "sweep_stale_sandboxes"]

OWNER_FILE = "owner"  # pid, start time, boot id of the process that made the sandbox
_NAME = re.compile(r"[0-9]+-[0-9a-f]{12}")
_swept = False


def _stale_owner(name: str, parent: Path) -> bool:
    """Whether the sandbox (dir or cgroup) ``<pid>-<token>`` belongs to a dead process: its
    ``owner`` file (pid, start time, boot id) when the dir has one, else the pid alone."""
    pid = name.split("-", 1)[0]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        owner = Owner.parse((parent / name / OWNER_FILE).read_text())
    except OSError:
        owner = None
    if owner is None or owner.pid != int(pid):
        owner = Owner(int(pid))
    return not owner.alive()


def _reap_cgroups(dirs: list[Path], deadline_s: float = 5.0) -> None:
    """SIGKILL every process left in a dead owner's cgroups, then remove them (a cgroup with a
    member cannot be removed, and its processes, in their own sessions, outlive the owner)."""
    _cgroups.kill_cgroups(dirs, deadline_s)
    _cgroups.remove_cgroups(dirs)


def sweep_stale(parent: Path) -> None:
    """Clean up after owners that died without doing it, once per process: kill what still
    runs in their sandboxes (their cgroups; under the rlimits fallback the processes that carry
    the sandbox's marker), detach the workspace's tmpfs quota mount, remove the dir and the
    cgroups. Sandboxes of live owners are never touched."""
    global _swept
    if _swept:
        return
    _swept = True
    bases = [base for base, _ in _cgroups.cgroup_bases()]
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if not _NAME.fullmatch(entry.name) or not _stale_owner(entry.name, parent):
                continue
            _reap_cgroups([base / entry.name for base in bases if (base / entry.name).is_dir()])
            kill_marked(f"CUDAENV_SANDBOX={entry.name.split('-', 1)[1]}")
            unmount(entry / "workspace")
            rmtree(entry)
    for base in bases:  # cgroups left without a dir (a dir in another TMPDIR: pid alone)
        with contextlib.suppress(OSError):
            for entry in base.iterdir():
                named = entry.is_dir() and _NAME.fullmatch(entry.name)
                if named and _stale_owner(entry.name, parent):
                    _reap_cgroups([entry])


def sweep_stale_sandboxes() -> None:
    """What creating a LocalSandbox does first: clean up after dead owners (once per process;
    for a watcher that outlives a killed run, see ``cudaenv.rollout._janitor``)."""
    parent = sandbox_parent()
    if parent.is_dir():
        sweep_stale(parent)
