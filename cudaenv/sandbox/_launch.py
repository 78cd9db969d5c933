"""Starting a local sandbox's supervisor: under bubblewrap (as its namespace's PID 1) or plain.

Why apart from the sandbox: this is where the sandbox's limits become rlimits and cgroups,
and the host's answers (``_host``) become a bubblewrap command line (``_bwrap_argv``); the
sandbox only says when (its first command, and the first after ``kill_processes``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from cudaenv.errors import SandboxError
from cudaenv.sandbox import _host
from cudaenv.sandbox._bwrap import Bwrap
from cudaenv.sandbox._bwrap_argv import INNER_CTL, bwrap_argv
from cudaenv.sandbox._cgroups import CgroupSet
from cudaenv.sandbox._slots import Runtime, readable
from cudaenv.sandbox._supervisor import SUPERVISOR
from cudaenv.sandbox.base import SandboxLimits

__all__ = ["launch"]


def _limits_arg(limits: SandboxLimits, *, bubblewrap: bool, pids_limited: bool) -> str:
    """The ``ulimit`` arguments every command starts under."""
    arg = (
        f"-f {limits.file_size_mb * 1024} -n {limits.open_files} -t {limits.cpu_time_s} "
        f"-d {limits.memory_mb * 1024}"
    )
    if not pids_limited:
        nproc = limits.max_processes
        if not bubblewrap:  # RLIMIT_NPROC counts all of the user's processes
            nproc += sum(1 for p in os.listdir("/proc") if p.isdigit())
        arg += f" -u {nproc}"
    return arg


def launch(
    *,
    root: Path,
    bwrap: Bwrap | None,
    limits: SandboxLimits,
    network: bool,
    env: dict[str, str],
    ro_binds: list[Path],
    rw_binds: list[Path],
    counter: itertools.count[int],
    lock: threading.RLock,
    ro_mounts: Sequence[tuple[str, str]] = (),
) -> Runtime:
    """Start the supervisor of the sandbox in ``root`` (``workspace/``, ``ctl/``) with two idle
    slots; its processes are in the sandbox's cgroups before it forks anything."""
    from cudaenv.toolkit import sandbox_ro_dirs

    workspace = root / "workspace"
    cgroups = CgroupSet(root.name, max_processes=limits.max_processes, memory_mb=limits.memory_mb)
    limits_arg = _limits_arg(
        limits, bubblewrap=bwrap is not None, pids_limited=cgroups.pids_limited
    )
    inner_ctl = INNER_CTL if bwrap is not None else str(root / "ctl")
    bash = os.path.realpath(shutil.which("bash") or "/bin/bash")  # a link may be hidden
    script = [bash, "--noprofile", "--norc", "-c", SUPERVISOR, "cudaenv-supervisor"]
    script += [inner_ctl, limits_arg, bash]
    live_r, live_w = os.pipe2(os.O_CLOEXEC)
    log = open(root / "supervisor.log", "wb")  # noqa: SIM115 (closed below)
    info_r = info_w = -1
    try:
        if bwrap is not None:
            info_r, info_w = os.pipe2(os.O_CLOEXEC)
            argv = bwrap_argv(
                bwrap=bwrap.path,
                workspace=workspace,
                ctl=root / "ctl",
                network=network,
                hide=[_host.sandbox_parent(), *_host.hidden_data_dirs()],
                ro_binds=[*_host.python_prefixes(), *sandbox_ro_dirs(), *ro_binds],
                rw_binds=rw_binds,
                ro_mounts=ro_mounts,
                tmp_size_bytes=(limits.file_size_mb << 20) if bwrap.size_flag else None,
                info_fd=info_w,
                command=script,
            )
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=live_w, stderr=log,
                env=env, pass_fds=(info_w,),
            )  # fmt: skip
            os.close(info_w)
            pid = _read_child_pid(info_r, proc, root)
        else:
            (root / "home").mkdir(exist_ok=True)
            proc = subprocess.Popen(
                script, stdin=subprocess.PIPE, stdout=live_w, stderr=log,
                env=env, cwd=workspace, start_new_session=True,
            )  # fmt: skip
            pid = proc.pid
    finally:
        os.close(live_w)
        log.close()
        if info_r >= 0:
            os.close(info_r)
    cgroups.add(pid)  # before the first request, so every command starts inside
    pidfd = None
    if bwrap is not None:
        with contextlib.suppress(OSError, AttributeError):
            pidfd = os.pidfd_open(pid)
    assert proc.stdin is not None
    stdin_fd = os.dup(proc.stdin.fileno())
    os.set_inheritable(stdin_fd, False)
    proc.stdin.close()
    rt = Runtime(proc, stdin_fd, live_r, pidfd, cgroups, str(root / "ctl"), counter, lock)
    rt.init_pid = pid
    rt.open_slots(2)
    return rt


def _read_child_pid(info_r: int, proc: subprocess.Popen[bytes], root: Path) -> int:
    """The host pid of the namespace's PID 1, from bubblewrap's --info-fd."""
    buf = b""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        ready = readable(info_r, max(0.0, end - time.monotonic()))
        chunk = os.read(info_r, 4096) if ready else b""
        buf += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(buf)["child-pid"])
        if not chunk:
            break
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()
    log = (root / "supervisor.log").read_text(errors="replace")[-2000:]
    raise SandboxError(f"bubblewrap failed to start the sandbox: {log.strip()}")
