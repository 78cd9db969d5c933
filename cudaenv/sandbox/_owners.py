"""Who owns a sandbox, and whether that owner still lives (shared by the local and docker backends).

Why: a SIGKILLed run (an operator's ``kill -9``, the OOM killer) never cleans up, so the next
run must tell what a dead process left behind from what a live one is using. A pid alone is
not enough: pids are reused, and a container or a temp dir can outlive a reboot. So an owner is
``(pid, start time, boot id)``: the start time is field 22 of ``/proc/<pid>/stat`` (clock
ticks since boot), the boot id ``/proc/sys/kernel/random/boot_id``. An owner is dead when the
boot id differs, the pid is gone, or the pid now belongs to a process started at another time.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Owner", "boot_id", "proc_start"]


@functools.cache
def boot_id() -> str:
    """This boot's id ("" where the kernel does not say)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def proc_start(pid: int) -> str | None:
    """Start time of ``pid`` (clock ticks since boot), None if there is no such process."""
    fields = _stat(pid)
    return fields[19] if fields else None


@dataclass(frozen=True)
class Owner:
    """A process identity that survives pid reuse; "" fields are unknown (older records)."""

    pid: int
    start: str = ""
    boot: str = ""

    @classmethod
    def me(cls) -> Owner:
        return cls(os.getpid(), proc_start(os.getpid()) or "", boot_id())

    def alive(self) -> bool:
        """False only when the owner is surely gone (unknown fields count as a match)."""
        if self.pid <= 0:  # not a process id: nothing to judge by, so never "dead"
            return True
        if self.boot and boot_id() and self.boot != boot_id():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        fields = _stat(self.pid)
        if fields is None:  # no /proc here: the signal's answer is all there is
            return True
        if fields[0] in ("Z", "X"):  # dead, not yet reaped by its parent
            return False
        return not (self.start and fields[19] != self.start)

    def dump(self) -> str:
        """One line: ``pid start boot`` (what :meth:`parse` reads back)."""
        return f"{self.pid} {self.start or '-'} {self.boot or '-'}\n"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        """The owner written by :meth:`dump`; None when ``text`` is not one."""
        words = text.split()
        if len(words) != 3 or not words[0].isdigit():
            return None
        return cls(int(words[0]), *("" if w == "-" else w for w in words[1:]))
