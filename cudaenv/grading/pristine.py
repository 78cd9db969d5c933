"""Every stage after the build runs from pristine artifacts, with nothing of the last run alive.

Why: test, sanitizer and every benchmark round run in one sandbox. A correct solution could
rewrite ``./test.out`` (or the Python harness, or its own source) during its test run, and the
benchmark then timed a script that only printed the completion line; or it could leave a
``setsid`` busy loop behind to slow the baseline's timed rounds. So right after each run of the
solution's sandbox the grader (:func:`settle`):

1. asks the sandbox which processes outlived the run (``Sandbox.stray_processes``): any is a
   suspected hack;
2. kills the sandbox's whole process tree (``kill_processes``: its pid namespace and cgroup)
   and waits until every stray pid is dead; one that will not die is an infrastructure fault,
   and no timed run starts;
3. re-lays the workspace from the :class:`Snapshot` taken after the build (build outputs,
   harness, test files, solution files, checked by SHA-256): a changed or missing file is a
   suspected hack and is restored; a file, link or directory the run added is removed.

The sandboxes in use cannot make the workspace read-only to the solution (it runs as the
files' owner, root of its user namespace), so the check and re-lay before each stage is the
defence, not file modes.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cudaenv.errors import CudaEnvError
from cudaenv.grading.build_cache import make_executable
from cudaenv.grading.stages import StageInfrastructureFault
from cudaenv.sandbox import Sandbox, pid_alive

KILL_DEADLINE_S = 10.0
#: what is in the workspace besides regular files and directories: links, fifos, sockets;
#: first every entry made readable again (a run could chmod 000 a file or a directory)
_SPECIAL = "chmod -R u+rwX . 2>/dev/null; find . -mindepth 1 ! -type f ! -type d -printf '%P\\n'"


def _interpreter_cache(rel: str) -> bool:
    """Bytecode caches (``__pycache__``, ``.pyc``): rewritten by every honest import, so never
    part of the snapshot; removed before each stage like any file a run added (a forged
    ``.pyc`` of the harness is not loaded by the next run)."""
    return "__pycache__" in rel.split("/") or rel.endswith((".pyc", ".pyo"))


def _special(box: Sandbox) -> set[str]:
    return set(box.exec(_SPECIAL, timeout=60).stdout.splitlines())


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_digest(box: Sandbox, rel: str) -> str | None:
    """The file's digest; None when it cannot be read (it counts as changed)."""
    try:
        return _digest(box.read_file(rel))
    except (OSError, CudaEnvError):
        return None


@dataclass
class Snapshot:
    """The workspace's files as the build left them; ``outputs`` are those the build made."""

    files: dict[str, bytes]
    outputs: set[str] = field(default_factory=set)
    special: set[str] = field(default_factory=set)  # links the build made, kept as they are

    @classmethod
    def take(cls, box: Sandbox, inputs: set[str]) -> Snapshot:
        files = {rel: box.read_file(rel) for rel in box.list_files() if not _interpreter_cache(rel)}
        return cls(files, {rel for rel in files if rel not in inputs}, _special(box))

    def digests(self) -> dict[str, str]:
        return {rel: _digest(data) for rel, data in self.files.items()}

    def restore(self, box: Sandbox) -> list[str]:
        """Re-lay the workspace; the snapshot's files that were changed or removed."""
        special = _special(box)
        present = set(box.list_files())
        changed = [
            rel
            for rel, data in self.files.items()
            if rel not in present or _read_digest(box, rel) != _digest(data)
        ]
        extra = sorted(present - set(self.files)) + sorted(special - self.special)
        if doomed := [*changed, *extra]:
            box.exec("rm -rf -- " + " ".join(shlex.quote(f"./{r}") for r in doomed), timeout=60)
        for rel in changed:
            box.write_file(rel, self.files[rel])
        make_executable(box, [rel for rel in changed if rel in self.outputs])
        return changed


def kill_and_confirm(box: Sandbox) -> list[int]:
    """Kill the sandbox's processes; the strays that were alive before (all dead now)."""
    strays = box.stray_processes() or []
    box.kill_processes()
    end = time.monotonic() + KILL_DEADLINE_S
    while (left := [pid for pid in strays if pid_alive(pid)]) and time.monotonic() < end:
        time.sleep(0.01)
    if left:
        raise StageInfrastructureFault(
            f"processes {left[:5]} of the solution's sandbox survived a kill; no timed run starts"
        )
    return strays


def settle(
    box: Sandbox,
    snapshot: Snapshot | None,
    after: str,
    between: Callable[[], None] | None = None,
) -> list[str]:
    """What the run ``after`` names left behind (as suspected-hack lines), now undone.
    ``between`` runs once every process is dead and before the re-lay (a split harness's
    outputs are collected there: :mod:`cudaenv.grading.checker`)."""
    found = []
    if strays := kill_and_confirm(box):
        found.append(
            f"{len(strays)} process(es) outlived the solution's {after} (killed before any "
            "timed run)"
        )
    if between is not None:
        between()
    if snapshot is not None and (changed := snapshot.restore(box)):
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        found.append(f"the solution's {after} rewrote {shown} (restored from the build)")
    return found
