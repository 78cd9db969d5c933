"""A watcher process that cleans up after a Ray driver that died without doing it.

Why: a SIGKILLed driver (an operator's ``kill -9``, the OOM killer) runs no cleanup. Ray's
fate sharing takes its GCS, raylet and workers down within seconds, but the raylet's agents
linger for up to a minute, and what the workers' episodes had opened stays: docker containers
(8 GB limit each), sandbox dirs with their tmpfs mounts and cgroups, and the processes of an
rlimits sandbox. :func:`start` launches this module once per driver, in its own session
(a Ctrl-C of the driver's terminal does not reach it). It waits on the driver's pidfd, noting
the driver's Ray processes as they come (their pid and start time, so a reused pid is never
hit); once the driver is dead it SIGKILLs those still alive, waits for them to be gone, then
sweeps the local sandboxes and reaps the containers of dead owners, and exits.

Run as ``python -m cudaenv.rollout._janitor DRIVER_PID DRIVER_START``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from cudaenv.sandbox import Owner, boot_id, proc_start

__all__ = ["start"]

POLL_S = 1.0
HANG_GUARD_S = 30.0
_started: int | None = None


def start() -> None:
    """Watch this process (once per process): it never outlives a SIGKILLed driver's Ray."""
    global _started
    if _started == os.getpid():
        return
    me = Owner.me()
    subprocess.Popen(
        [sys.executable, "-m", __name__, str(me.pid), me.start],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _started = me.pid


def _is_ray(pid: int) -> bool:
    """Ray's processes: its binaries and scripts (``.../ray/...``) and workers (``ray::...``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return argv[0].startswith(b"ray::") or any(b"/ray/" in arg for arg in argv)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(stat[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _wait_for_death(driver: Owner, seen: dict[int, Owner]) -> None:
    """Block until the driver dies, noting its Ray descendants every ``POLL_S``."""
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(driver.pid)
    poller = select.poll()
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while driver.alive():
        for pid in _descendants(driver.pid):
            if pid not in seen and _is_ray(pid):
                seen[pid] = Owner(pid, proc_start(pid) or "", boot_id())
        if pidfd is None:
            time.sleep(POLL_S)
        elif poller.poll(POLL_S * 1000):
            break


def main(argv: list[str]) -> int:
    driver = Owner(int(argv[1]), argv[2], boot_id())
    seen: dict[int, Owner] = {}
    _wait_for_death(driver, seen)
    end = time.monotonic() + HANG_GUARD_S
    while (alive := [o for o in seen.values() if o.alive()]) and time.monotonic() < end:
        for owner in alive:
            with contextlib.suppress(OSError):
                os.kill(owner.pid, signal.SIGKILL)
        time.sleep(0.05)
    from cudaenv.sandbox import reap_orphans

    reap_orphans()  # every backend's sandboxes of dead owners (an unreachable one: none)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
