"""The Docker backend's Sandbox API: requests to one container's exec server.

Why apart from ``docker`` (the backend's public face) and ``docker_pool``: the pool lends
these sandboxes and the sandbox must not know the pool (a sandbox is given back through the
``release`` callable it was lent with), so neither module imports the other.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from cudaenv.errors import SandboxClosedError, SandboxError, SandboxPathError
from cudaenv.sandbox._container import WORKSPACE, Container, writable_for_sandbox_user
from cudaenv.sandbox._docker_engine import docker_client, ensure_image
from cudaenv.sandbox.base import ExecResult, Sandbox, cap_output
from cudaenv.sandbox.options import DockerOptions, validated

__all__ = ["DockerSandbox", "sibling_options"]


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

    Options are :class:`DockerOptions` fields. ``close()`` removes the container (a pooled one
    is handed to its pool, which removes it in the background: a container is never lent
    twice); a second ``close()`` does nothing.
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
    def _wrap(
        cls, box: Container, release: Callable[[Container], None] | None = None
    ) -> DockerSandbox:
        """The sandbox API over a started container that nothing ran in yet; ``close()``
        passes the container to ``release`` (a pool's), else removes it."""
        self = cls.__new__(cls)
        self._init(box, release)
        return self

    def _init(self, box: Container, release: Callable[[Container], None] | None) -> None:
        self._box: Container | None = box
        self._release = release
        self._ran = False
        self._cap = box.options.limits.output_cap_bytes
        self.network = box.options.network

    @property
    def fresh(self) -> bool:
        """True until the first command runs: the container is new (never lent before,
        pooled or not), so nothing but its own exec server has run in it."""
        return not self._ran and self._box is not None

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
        self._live()
        self._ran = True
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
        """The exec server kills every process of the container but itself and init."""
        self._call({"op": "killall"}, timeout=30.0)

    def close(self) -> None:
        box, self._box = self._box, None
        if box is None:
            return
        if self._release is not None:
            self._release(box)
        else:
            box.remove()
