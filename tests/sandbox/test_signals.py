"""The GIL-free kills behave as ``os.kill`` / ``pidfd_send_signal`` do, and the bubblewrap
policy's path test (string-based since it runs at every sandbox start) matches ``Path.parents``."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.sandbox._bwrap_argv import _is_under
from cudaenv.sandbox._signals import kill, pidfd_kill


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_kill_delivers_the_signal() -> None:
    proc = _sleeper()
    try:
        kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        proc.kill()


def test_kill_of_a_missing_pid_raises_like_os_kill() -> None:
    proc = _sleeper()
    proc.kill()
    proc.wait()  # reaped: the pid is free (and unused for a moment)
    with pytest.raises(ProcessLookupError) as expected:
        os.kill(proc.pid, 0)
    with pytest.raises(OSError) as got:
        kill(proc.pid, 0)
    assert got.value.errno == expected.value.errno == errno.ESRCH


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd_open in this Python")
def test_pidfd_kill_delivers_and_reports_errors() -> None:
    proc = _sleeper()
    fd = os.pidfd_open(proc.pid)
    try:
        pidfd_kill(fd, signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
        with pytest.raises(OSError) as got:  # the process is gone: ESRCH, as the stdlib says
            pidfd_kill(fd, signal.SIGKILL)
        assert got.value.errno == errno.ESRCH
    finally:
        os.close(fd)
        proc.kill()
    with pytest.raises(OSError) as bad:
        pidfd_kill(fd, signal.SIGKILL)  # closed descriptor
    assert bad.value.errno == errno.EBADF


@pytest.mark.parametrize(
    ("path", "roots"),
    [
        ("/tmp", ["/tmp"]),
        ("/tmp/x/y", ["/run", "/tmp"]),
        ("/tmpfoo", ["/tmp"]),
        ("/var/tmp", ["/tmp", "/run"]),
        ("/a", ["/"]),
        ("/", ["/a"]),
        ("/home/user", []),
    ],
)
def test_is_under_matches_path_parents(path: str, roots: list[str]) -> None:
    p, rs = Path(path), [Path(r) for r in roots]
    assert _is_under(p, rs) == any(p == r or r in p.parents for r in rs)
