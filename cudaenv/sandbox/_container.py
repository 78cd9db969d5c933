"""One locked-down container and the connection to its exec server (lifecycle only).

Why apart from the sandbox: a DockerSandbox, the warm pool (``docker_pool``) and a
compile-only sibling all start and remove containers the same way; the Sandbox API on top
(``_docker_sandbox.DockerSandbox``) only sends requests. See ``docker``'s docstring for what a
container may do. A container is used by one holder and removed: there is no reset.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import tempfile
import time
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from cudaenv.errors import SandboxError, SandboxTimeoutError
from cudaenv.sandbox._docker_engine import (
    LABEL_POOL,
    LABEL_RUN_DIR,
    RUN_DIR_PREFIX,
    docker_client,
    docker_sdk,
    engine_errors,
    ensure_image,
    gpu_runtime_hint,
    owner_labels,
    reap_orphans_once,
)
from cudaenv.sandbox.options import DockerOptions

__all__ = [
    "RUN_DIR",
    "SANDBOX_UID",
    "SERVER_CAPS",
    "SERVER_PATH",
    "SERVER_USER",
    "WORKSPACE",
    "Container",
    "writable_for_sandbox_user",
]

WORKSPACE = "/workspace"
RUN_DIR = "/run/cudaenv"
SERVER_PATH = "/opt/cudaenv/exec_server.py"
SANDBOX_UID = 1000
#: the exec server's uid in the container (root, with only these capabilities): one the
#: sandbox user is not, so it cannot ptrace, signal or read the server
SERVER_USER = "0:0"
SERVER_CAPS = ["SETUID", "SETGID", "KILL"]
_SERVER_SOURCE = Path(__file__).with_name("_exec_server.py")


def private_to_server(path: Path) -> None:
    """Let only the exec server (root of the container) and this process use the run
    directory ``path``: 0700 where this process is root (the server then owns it); else
    0733 with the sticky bit, so the server may create its socket there and no one but the
    owner of an entry may replace it."""
    path.chmod(0o700 if os.geteuid() == 0 else 0o1733)


def writable_for_sandbox_user(path: Path) -> None:
    """Let the container's user (``SANDBOX_UID``) write the host directory ``path``: chown to
    it, or, where this process may not (not root), open it to everyone."""
    try:
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
    except PermissionError:
        path.chmod(0o777)


class Container:
    """One running container and the connection to its exec server (lifecycle only)."""

    def __init__(self, options: DockerOptions) -> None:
        self.options = options
        self.client = docker_client(options.base_url)
        self.container: Any = None
        self.name = f"cudaenv-{uuid.uuid4().hex[:12]}"
        self.run_dir = ""
        self.server: tuple[int, int] | None = None  # the server's host (pid, uid)
        self.image_id = ""

    @classmethod
    def started(cls, options: DockerOptions) -> Container:
        """A running container, or nothing left behind (what failed to start is removed)."""
        box = cls(options)
        try:
            box.start()
        except BaseException:
            box.discard()
            raise
        return box

    @property
    def sock_path(self) -> str:
        return os.path.join(self.run_dir, "exec.sock")

    def start(self) -> None:
        docker = docker_sdk()
        opts, lim = self.options, self.options.limits
        base = tempfile.gettempdir() if len(tempfile.gettempdir()) < 60 else "/tmp"
        self.run_dir = tempfile.mkdtemp(prefix=RUN_DIR_PREFIX, dir=base)
        private_to_server(Path(self.run_dir))
        kwargs: dict[str, Any] = {}
        if opts.gpus is not None:
            kwargs["device_requests"] = [
                docker.types.DeviceRequest(count=opts.gpus, capabilities=[["gpu"]])
                if isinstance(opts.gpus, int)
                else docker.types.DeviceRequest(
                    device_ids=[str(g) for g in opts.gpus], capabilities=[["gpu"]]
                )
            ]
        if opts.cpus:
            kwargs["nano_cpus"] = int(opts.cpus * 1e9)
        if not opts.network:
            kwargs["network_mode"] = "none"
        fsize = lim.file_size_mb * 1024 * 1024
        reap_orphans_once(opts.base_url)
        ensure_image(self.client, opts.image)
        with gpu_runtime_hint(opts.gpus), engine_errors(f"starting container from {opts.image}"):
            self.container = self.client.containers.run(
                opts.image,
                [
                    "python3",
                    "-I",
                    "-S",
                    SERVER_PATH,
                    f"{RUN_DIR}/exec.sock",
                    WORKSPACE,
                    str(SANDBOX_UID),
                ],
                name=self.name,
                detach=True,
                init=True,
                user=SERVER_USER,
                working_dir=WORKSPACE,
                read_only=True,
                tmpfs={
                    WORKSPACE: f"rw,exec,nosuid,nodev,size={opts.workspace_mb}m,"
                    f"uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755",
                    "/tmp": f"rw,exec,nosuid,nodev,size={opts.tmp_mb}m,mode=1777",
                },
                volumes={
                    **{p: {"bind": p, "mode": "ro"} for p in opts.extra_ro_binds},
                    **{p: {"bind": p, "mode": "rw"} for p in opts.extra_rw_binds},
                    **{host: {"bind": inside, "mode": "ro"} for host, inside in opts.ro_mounts},
                    self.run_dir: {"bind": RUN_DIR, "mode": "rw"},
                    str(_SERVER_SOURCE): {"bind": SERVER_PATH, "mode": "ro"},
                },
                cap_drop=["ALL"],
                cap_add=SERVER_CAPS,
                security_opt=["no-new-privileges"],
                mem_limit=f"{lim.memory_mb}m",
                memswap_limit=f"{lim.memory_mb}m",
                pids_limit=lim.max_processes,
                ulimits=[
                    docker.types.Ulimit(name="nofile", soft=lim.open_files, hard=lim.open_files),
                    docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize),
                ],
                environment={"HOME": WORKSPACE, "LANG": "C.UTF-8", **opts.environment},
                labels={
                    **owner_labels(),
                    LABEL_POOL: opts.pool,
                    LABEL_RUN_DIR: self.run_dir,
                },
                hostname="sandbox",
                **kwargs,
            )
        self.image_id = str(self.container.attrs.get("Image") or opts.image)
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Poll the socket until the server answers; remember its host pid and uid, which
        every later reply must come from (nothing of the sandbox user's has run yet)."""
        deadline = time.monotonic() + self.options.start_timeout_s
        last_check = time.monotonic()
        while True:
            try:
                pong, self.server = self._roundtrip({"op": "ping"}, 5.0)
                if pong.get("uid") == pong.get("user", SANDBOX_UID):
                    raise SandboxError(
                        f"the exec server in {self.name} runs as the sandbox user "
                        f"(uid {pong.get('uid')}); it must run as another"
                    )
                return
            except OSError as exc:
                now = time.monotonic()
                if now > deadline:
                    raise SandboxTimeoutError(
                        f"exec server in {self.name} did not start within "
                        f"{self.options.start_timeout_s:.0f} s: {exc}"
                    ) from exc
                if now - last_check > 0.5:
                    last_check = now
                    self._raise_if_dead()
                time.sleep(0.002)

    def _raise_if_dead(self) -> None:
        with engine_errors(f"inspecting container {self.name}"):
            try:
                self.container.reload()
            except docker_sdk().errors.NotFound as exc:
                raise SandboxError(
                    f"container {self.name} no longer exists (removed externally?)"
                ) from exc
        state = self.container.attrs.get("State", {})
        if state.get("Status") != "running":
            logs = self.container.logs(tail=20).decode("utf-8", "replace").strip()
            raise SandboxError(
                f"container {self.name} is not running (status={state.get('Status')}, "
                f"exit code {state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')}); "
                f"killed externally or its exec server died" + (f"; logs: {logs}" if logs else "")
            )

    def _roundtrip(
        self, payload: dict[str, Any], timeout: float
    ) -> tuple[dict[str, Any], tuple[int, int]]:
        """Send one request line, read one reply line; also return the server's host pid and
        uid (SO_PEERCRED)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(self.sock_path)
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            pid, uid, _ = struct.unpack("3i", creds)
            if self.server is not None and (pid, uid) != self.server:
                raise SandboxError(
                    f"exec socket of {self.name} is served by pid {pid} uid {uid}, not by the "
                    f"sandbox's server (pid {self.server[0]} uid {self.server[1]}); the sandbox "
                    f"was tampered with"
                )
            sock.sendall(json.dumps(payload).encode() + b"\n")
            chunks: list[bytes] = []
            while not chunks or not chunks[-1].endswith(b"\n"):
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionResetError("connection closed before the reply ended")
                chunks.append(chunk)
        return json.loads(b"".join(chunks)), (pid, uid)

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One round trip to the exec server; SandboxError on any transport failure."""
        try:
            return self._roundtrip(payload, timeout)[0]
        except TimeoutError as exc:
            raise SandboxTimeoutError(f"exec server in {self.name} did not answer in time") from exc
        except OSError as exc:
            self._raise_if_dead()
            raise SandboxError(f"exec server in {self.name} unreachable: {exc}") from exc

    def discard(self) -> None:
        """Best-effort remove after a failed start, never masking the original error. A
        container the engine created but could not start (``containers.run`` raised, e.g. GPUs
        without a GPU runtime) is found by its name."""
        with suppress(SandboxError):
            if self.container is None:
                docker = docker_sdk()
                with (
                    engine_errors(f"removing container {self.name}"),
                    suppress(docker.errors.NotFound),
                ):
                    self.client.containers.get(self.name).remove(force=True)
            self.remove()

    def remove(self) -> None:
        try:
            if self.container is not None:
                with engine_errors(f"removing container {self.name}"):
                    try:
                        self.container.remove(force=True)
                    except docker_sdk().errors.NotFound:
                        pass
        finally:
            if self.run_dir:
                shutil.rmtree(self.run_dir, ignore_errors=True)
