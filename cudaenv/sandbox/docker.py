"""Docker backend: one locked-down container per sandbox, plus a warm pool.

Why a resident exec server: ``docker exec`` costs 36-52 ms a command, too slow for agents
that issue thousands of small commands. Each container runs ``_exec_server.py`` (read-only
bind mount) as its main process under ``init``; it listens on a unix socket in a per-container
host directory bind-mounted at ``/run/cudaenv``, so a command costs a socket round trip.
This needs a Docker engine on this host (bind mounts of local paths); remote engines are not
supported. Every reply is checked to come from the container's own server process
(``SO_PEERCRED``), so an agent cannot answer in its place by swapping the socket.

Containers run as uid 1000 with ``cap_drop=ALL``, ``no-new-privileges``, a read-only root,
tmpfs ``/workspace`` and ``/tmp``, no network unless asked, and the memory, pids and ulimit
caps of :class:`SandboxLimits`. They carry owner labels (``cudaenv.owner_pid``, its start
time, ``cudaenv.owner_boot``, ``cudaenv.owner_host``) so that :func:`reap_orphans` can remove
what a dead process left behind (a SIGKILLed run never cleans up): every entry point that
starts a container (a sandbox, a pool, the grader's build containers) reaps once per process
and engine, with one label-filtered list, before its first container.

Modules: the engine (client, errors, labels, reaping) is ``_docker_engine``, one container's
lifecycle ``_container``, the warm pool ``docker_pool``; this module is the Sandbox API.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from cudaenv.errors import SandboxClosedError, SandboxError, SandboxPathError
from cudaenv.sandbox._container import (
    SANDBOX_UID,
    WORKSPACE,
    Container,
    writable_for_sandbox_user,
)
from cudaenv.sandbox._docker_engine import (
    LABEL_OWNER_BOOT,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    LABEL_POOL,
    LABEL_RUN_DIR,
    docker_client,
    ensure_image,
    owner_labels,
    reap_orphans,
    reap_orphans_once,
)
from cudaenv.sandbox.base import ExecResult, Sandbox, cap_output
from cudaenv.sandbox.options import EVAL_IMAGE, DockerOptions, validated

if TYPE_CHECKING:
    from cudaenv.sandbox.docker_pool import DockerSandboxPool

__all__ = [
    "EVAL_IMAGE",
    "LABEL_OWNER_BOOT",
    "LABEL_OWNER_HOST",
    "LABEL_OWNER_PID",
    "LABEL_OWNER_START",
    "LABEL_POOL",
    "LABEL_RUN_DIR",
    "SANDBOX_UID",
    "DockerOptions",
    "DockerSandbox",
    "DockerSandboxPool",
    "docker_client",
    "owner_labels",
    "reap_orphans",
    "reap_orphans_once",
    "sibling_options",
]


def __getattr__(name: str) -> Any:
    """``DockerSandboxPool`` from ``docker_pool`` on first use (that module imports this one)."""
    if name == "DockerSandboxPool":
        from cudaenv.sandbox.docker_pool import DockerSandboxPool

        return DockerSandboxPool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sibling_options(
    options: DockerOptions, *, rw_binds: list[str], ro_binds: list[str]
) -> DockerOptions:
    """A compile-only sibling's options: these without GPUs, network or pool label, plus the
    binds (absolute host paths; one that does not exist is left out, as the local backend
    does, so the engine never creates a root-owned directory on the host for it)."""

    def present(paths: list[str], kind: str) -> list[str]:
        found = [str(Path(p).resolve()) for p in paths]
        return [p for p in found if (os.path.isdir(p) if kind == "rw" else os.path.exists(p))]

    return options.model_copy(
        update={
            "gpus": None,
            "network": False,
            "pool": "",
            "ro_mounts": [],  # e.g. a model gateway's socket: a compiler needs none
            "extra_rw_binds": [*options.extra_rw_binds, *present(rw_binds, "rw")],
            "extra_ro_binds": [*options.extra_ro_binds, *present(ro_binds, "ro")],
        }
    )


def _check_rel(path: str) -> str:
    """Accept a workspace-relative path (or an absolute one under /workspace)."""
    if path.startswith(WORKSPACE + "/"):
        path = path[len(WORKSPACE) + 1 :]
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or ".." in parts or "\0" in path:
        raise SandboxPathError(f"path {path!r} is outside the workspace")
    return path


def _decode(stream: dict[str, Any], cap: int) -> tuple[str, bool]:
    """cap_output's text from the server's head/tail/total of one stream (its head is the
    first ``cap`` bytes, its tail the last ``cap`` of the rest)."""
    head = base64.b64decode(stream["head"])
    tail = base64.b64decode(stream["tail"])
    total = int(stream["total"])
    if len(head) + len(tail) == total:  # the whole stream
        return cap_output(head + tail, cap)
    return cap_output(head, cap, tail=tail, total=total)


class DockerSandbox(Sandbox):
    """A sandbox in its own container; construction starts it (about 0.3 s cold).

    Options are :class:`DockerOptions` fields. ``close()`` removes the container (or hands it
    back to its pool, reset); a second ``close()`` does nothing.
    """

    isolation = "docker"

    def toolchain_env(self) -> dict[str, str]:
        """Nothing: commands use the image's own toolchain and environment (its ``ENV``)."""
        return {}

    @classmethod
    def gpu_access_for(cls, options: Mapping[str, object]) -> bool:
        return DockerOptions.requests_gpus(options.get("gpus"))  # type: ignore[arg-type]

    @classmethod
    def preflight(cls, options: Mapping[str, object]) -> None:
        """The engine answers and holds the image (pulled if it can be): a run stops before
        its first episode instead of recording every one as an infrastructure fault."""
        opts = validated(DockerOptions, dict(options))
        ensure_image(docker_client(opts.base_url), opts.image)

    @property
    def gpu_access(self) -> bool:
        """Only with device requests (``gpus``): a container sees no GPU otherwise."""
        return bool(self._live().options.gpu_access)

    @property
    def toolchain_id(self) -> str:
        """The image's id: builds made from another image (or the host) are not reused here."""
        return f"docker:{self._live().image_id}"

    def __init__(self, **options: Any) -> None:
        self._init(Container.started(validated(DockerOptions, options)), None)

    @classmethod
    def _wrap(cls, box: Container, pool: DockerSandboxPool | None = None) -> DockerSandbox:
        """The sandbox API over a started container (lent by ``pool``, if given)."""
        self = cls.__new__(cls)
        self._init(box, pool)
        return self

    def _init(self, box: Container, pool: DockerSandboxPool | None) -> None:
        self._box: Container | None = box
        self._pool = pool
        self._cap = box.options.limits.output_cap_bytes
        self.network = box.options.network

    @property
    def output_cap_bytes(self) -> int:
        return self._cap

    @property
    def options(self) -> DockerOptions:
        """The options this sandbox's container was started with."""
        return self._live().options

    @property
    def container_name(self) -> str:
        return self._live().name

    def _live(self) -> Container:
        if self._box is None:
            raise SandboxClosedError("the sandbox is closed")
        return self._box

    def _call(self, payload: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        resp = self._live().request(payload, timeout=timeout)
        if resp.get("ok"):
            return resp
        kind, msg = resp.get("error"), resp.get("message", "")
        if kind == "path":
            raise SandboxPathError(f"path {msg!r} resolves outside the workspace")
        if kind == "notfound":
            raise FileNotFoundError(f"no such file in the workspace: {msg}")
        if kind == "IsADirectoryError":
            raise IsADirectoryError(f"is a directory: {msg}")
        raise SandboxError(f"exec server failed ({kind}): {msg}")

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in the container, as the sandbox user.

        ``env`` is merged over the container's environment (the image's ``ENV``, then
        ``DockerOptions.environment``, then ``HOME=/workspace``); it never replaces it, so a
        command keeps the image's ``PATH`` unless ``env`` sets one. Host paths mean nothing here:
        the grader passes :meth:`toolchain_env` (empty) rather than the host toolkit's variables.
        """
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        resp = self._call(
            {
                "op": "exec",
                "command": command,
                "timeout": timeout,
                "env": dict(env or {}),
                "cwd": _check_rel(cwd) if cwd not in (None, "", ".", WORKSPACE) else None,
                "cap": self._cap,
                "cpu_time_s": self._live().options.limits.cpu_time_s,
            },
            timeout=timeout + 30.0,
        )
        stdout, t1 = _decode(resp["stdout"], self._cap)
        stderr, t2 = _decode(resp["stderr"], self._cap)
        return ExecResult(
            exit_code=resp["exit_code"],
            stdout=stdout,
            stderr=stderr,
            timed_out=resp["timed_out"],
            duration_s=resp["duration_s"],
            truncated=t1 or t2,
        )

    def compile_sibling(self, *, rw_binds: list[str], ro_binds: list[str]) -> DockerSandbox:
        """A new container (never pooled) from this one's options without GPUs or network,
        the host directories ``rw_binds`` (made writable for the container's user) and
        ``ro_binds`` mounted at the same paths; see :meth:`Sandbox.compile_sibling`."""
        opts = sibling_options(self._live().options, rw_binds=rw_binds, ro_binds=ro_binds)
        for path in opts.extra_rw_binds[len(self._live().options.extra_rw_binds) :]:
            writable_for_sandbox_user(Path(path))
        return DockerSandbox._wrap(Container.started(opts))

    def write_file(self, path: str, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self._call(
            {"op": "write", "path": _check_rel(path), "data": base64.b64encode(raw).decode()}
        )

    def read_file(self, path: str) -> bytes:
        return base64.b64decode(self._call({"op": "read", "path": _check_rel(path)})["data"])

    def list_files(self) -> list[str]:
        return list(self._call({"op": "list"})["files"])

    def kill_processes(self) -> None:
        """The exec server kills every other process of the sandbox user (it stays up)."""
        self._call({"op": "killall"}, timeout=30.0)

    def close(self) -> None:
        box, self._box = self._box, None
        if box is None:
            return
        if self._pool is not None:
            self._pool._give_back(box)
        else:
            box.remove()
