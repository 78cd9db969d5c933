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
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from cudaenv.errors import (
    MissingExtraError,
    SandboxClosedError,
    SandboxError,
    SandboxPathError,
    SandboxTimeoutError,
)
from cudaenv.sandbox._owners import Owner
from cudaenv.sandbox.base import ExecResult, Sandbox, cap_output
from cudaenv.sandbox.options import EVAL_IMAGE, DockerOptions, validated

__all__ = [
    "EVAL_IMAGE",
    "DockerOptions",
    "DockerSandbox",
    "DockerSandboxPool",
    "owner_labels",
    "reap_orphans",
    "reap_orphans_once",
]

WORKSPACE = "/workspace"
RUN_DIR = "/run/cudaenv"
SERVER_PATH = "/opt/cudaenv/exec_server.py"
SANDBOX_UID = 1000
LABEL_OWNER_PID = "cudaenv.owner_pid"
LABEL_OWNER_START = "cudaenv.owner_start"
LABEL_OWNER_HOST = "cudaenv.owner_host"
LABEL_OWNER_BOOT = "cudaenv.owner_boot"
LABEL_POOL = "cudaenv.pool"
LABEL_RUN_DIR = "cudaenv.run_dir"
_SERVER_SOURCE = Path(__file__).with_name("_exec_server.py")
_RUN_DIR_PREFIX = "cudaenv-run-"


def _docker() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise MissingExtraError("docker", "docker") from exc
    return docker


@contextmanager
def _engine(what: str) -> Iterator[None]:
    """Turn docker SDK / transport failures into a SandboxError that names the problem."""
    docker = _docker()
    import requests

    try:
        yield
    except (requests.exceptions.ConnectionError, ConnectionError) as exc:
        raise SandboxError(
            f"{what}: Docker engine unreachable (is dockerd running?): {exc}"
        ) from exc
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"{what}: image not found: {exc.explanation}") from exc
    except docker.errors.DockerException as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(
            cause, requests.exceptions.ConnectionError | ConnectionError
        ):
            cause = cause.__cause__ or cause.__context__
        problem = "Docker engine unreachable (is dockerd running?)" if cause else "Docker error"
        raise SandboxError(f"{what}: {problem}: {exc}") from exc


@contextmanager
def _gpu_runtime_hint(gpus: int | list[int | str] | None) -> Iterator[None]:
    """Name the missing piece when GPUs were asked of an engine that cannot give any."""
    try:
        yield
    except SandboxError as exc:
        if gpus is not None and "could not select device driver" in str(exc):
            raise SandboxError(
                f"GPUs were requested (gpus={gpus!r}) but this Docker engine has no GPU runtime; "
                f"install the NVIDIA Container Toolkit and restart dockerd ({exc})"
            ) from exc
        raise


_images_seen: set[tuple[int, str]] = set()


def _ensure_image(client: Any, image: str) -> None:
    """The image on this engine, pulled if it is missing; else an error that says so (without
    it, a missing image surfaces as the registry's HTTP error from the implicit pull)."""
    key = (id(client), image)
    if key in _images_seen:
        return
    docker = _docker()
    with _engine(f"looking up image {image}"):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            try:
                client.images.pull(image)
            except docker.errors.DockerException as exc:
                raise SandboxError(
                    f"image {image!r} is not on this Docker engine and pulling it failed; build "
                    f"it (docker/build-images.sh, docker/build-cuda-images.sh) or pull it first "
                    f"({exc})"
                ) from exc
    _images_seen.add(key)


_clients: dict[str | None, Any] = {}
_clients_lock = threading.Lock()


def docker_client(base_url: str | None = None) -> Any:
    """A shared DockerClient per engine URL; SandboxError if the engine cannot be reached."""
    with _clients_lock:
        if base_url not in _clients:
            docker = _docker()
            with _engine("connecting to Docker"):
                client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
                client.ping()
            _clients[base_url] = client
        return _clients[base_url]


def owner_labels() -> dict[str, str]:
    """The labels that tie a container to this process (see :func:`reap_orphans`)."""
    me = Owner.me()
    return {
        LABEL_OWNER_PID: str(me.pid),
        LABEL_OWNER_START: me.start,
        LABEL_OWNER_BOOT: me.boot,
        LABEL_OWNER_HOST: socket.gethostname(),
    }


def _owner(labels: Mapping[str, str]) -> Owner | None:
    """The owner a container's labels name; None without a usable pid (never reaped)."""
    pid = labels.get(LABEL_OWNER_PID, "")
    if not pid.isdigit():
        return None
    return Owner(int(pid), labels.get(LABEL_OWNER_START, ""), labels.get(LABEL_OWNER_BOOT, ""))


def reap_orphans(base_url: str | None = None) -> list[str]:
    """Remove cudaenv containers of this host whose owner process is gone; return their names.

    Only containers with our owner labels and this host's name are looked at (a container of
    another host's process cannot be judged from here); one whose owner lives is never touched.
    """
    client = docker_client(base_url)
    docker = _docker()
    removed = []
    with _engine("reaping orphaned containers"):
        found = client.containers.list(
            all=True, filters={"label": f"{LABEL_OWNER_HOST}={socket.gethostname()}"}
        )
        for container in found:
            labels = container.labels
            owner = _owner(labels)
            if owner is None or owner.alive():
                continue
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:  # another process is removing it already
                if exc.status_code != 409:
                    raise
            _remove_run_dir(labels.get(LABEL_RUN_DIR, ""))
            removed.append(container.name)
    return removed


_reaped: set[str | None] = set()
_reap_lock = threading.Lock()


def reap_orphans_once(base_url: str | None = None) -> None:
    """:func:`reap_orphans` the first time this process uses an engine (then nothing)."""
    with _reap_lock:
        if base_url in _reaped:
            return
        reap_orphans(base_url)
        _reaped.add(base_url)


def _remove_run_dir(path: str) -> None:
    p = Path(path)
    if path and p.name.startswith(_RUN_DIR_PREFIX) and p.is_dir():
        shutil.rmtree(p, ignore_errors=True)


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


class _Container:
    """One running container and the connection to its exec server (lifecycle only)."""

    def __init__(self, options: DockerOptions) -> None:
        self.options = options
        self.client = docker_client(options.base_url)
        self.container: Any = None
        self.name = f"cudaenv-{uuid.uuid4().hex[:12]}"
        self.run_dir = ""
        self.server_pid = 0
        self.image_id = ""

    @property
    def sock_path(self) -> str:
        return os.path.join(self.run_dir, "exec.sock")

    def start(self) -> None:
        docker = _docker()
        opts, lim = self.options, self.options.limits
        base = tempfile.gettempdir() if len(tempfile.gettempdir()) < 60 else "/tmp"
        self.run_dir = tempfile.mkdtemp(prefix=_RUN_DIR_PREFIX, dir=base)
        try:
            os.chown(self.run_dir, SANDBOX_UID, SANDBOX_UID)
        except PermissionError:
            os.chmod(self.run_dir, 0o777)
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
        _ensure_image(self.client, opts.image)
        with _gpu_runtime_hint(opts.gpus), _engine(f"starting container from {opts.image}"):
            self.container = self.client.containers.run(
                opts.image,
                ["python3", "-I", "-S", SERVER_PATH, f"{RUN_DIR}/exec.sock", WORKSPACE],
                name=self.name,
                detach=True,
                init=True,
                user=f"{SANDBOX_UID}:{SANDBOX_UID}",
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
                    self.run_dir: {"bind": RUN_DIR, "mode": "rw"},
                    str(_SERVER_SOURCE): {"bind": SERVER_PATH, "mode": "ro"},
                },
                cap_drop=["ALL"],
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
        """Poll the socket until the server answers; remember its pid to check later replies."""
        deadline = time.monotonic() + self.options.start_timeout_s
        last_check = time.monotonic()
        while True:
            try:
                self.server_pid = self._roundtrip({"op": "ping"}, 5.0)[1]
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
        with _engine(f"inspecting container {self.name}"):
            try:
                self.container.reload()
            except _docker().errors.NotFound as exc:
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

    def _roundtrip(self, payload: dict[str, Any], timeout: float) -> tuple[dict[str, Any], int]:
        """Send one request line, read one reply line; also return the server's host pid."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(self.sock_path)
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            peer = struct.unpack("3i", creds)[0]
            if self.server_pid and peer and peer != self.server_pid:
                raise SandboxError(
                    f"exec socket of {self.name} is served by pid {peer}, not by the sandbox's "
                    f"server ({self.server_pid}); the sandbox was tampered with"
                )
            sock.sendall(json.dumps(payload).encode() + b"\n")
            chunks: list[bytes] = []
            while not chunks or not chunks[-1].endswith(b"\n"):
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionResetError("connection closed before the reply ended")
                chunks.append(chunk)
        return json.loads(b"".join(chunks)), peer

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One round trip to the exec server; SandboxError on any transport failure."""
        try:
            return self._roundtrip(payload, timeout)[0]
        except TimeoutError as exc:
            raise SandboxTimeoutError(f"exec server in {self.name} did not answer in time") from exc
        except OSError as exc:
            self._raise_if_dead()
            raise SandboxError(f"exec server in {self.name} unreachable: {exc}") from exc

    def reset(self) -> None:
        """Kill every user process, wipe the writable dirs, restart the server from disk."""
        old_boot = self.request({"op": "reset"}, timeout=10.0)["boot"]
        # Until it re-executes, the old image may still answer (or drop) a ping: wait for a
        # new boot token. Nothing else talks to the socket now, every user process is dead.
        deadline = time.monotonic() + 10.0
        while True:
            with suppress(OSError):
                if self._roundtrip({"op": "ping"}, 10.0)[0]["boot"] != old_boot:
                    return
            if time.monotonic() > deadline:
                raise SandboxTimeoutError(f"exec server in {self.name} did not restart")
            time.sleep(0.001)

    def discard(self) -> None:
        """Best-effort remove after a failed start, never masking the original error. A
        container the engine created but could not start (``containers.run`` raised, e.g. GPUs
        without a GPU runtime) is found by its name."""
        with suppress(SandboxError):
            if self.container is None:
                docker = _docker()
                with _engine(f"removing container {self.name}"), suppress(docker.errors.NotFound):
                    self.client.containers.get(self.name).remove(force=True)
            self.remove()

    def remove(self) -> None:
        try:
            if self.container is not None:
                with _engine(f"removing container {self.name}"):
                    try:
                        self.container.remove(force=True)
                    except _docker().errors.NotFound:
                        pass
        finally:
            if self.run_dir:
                shutil.rmtree(self.run_dir, ignore_errors=True)


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

    @property
    def gpu_access(self) -> bool:
        """Only with device requests (``gpus``): a container sees no GPU otherwise."""
        return bool(self._live().options.gpu_access)

    @property
    def toolchain_id(self) -> str:
        """The image's id: builds made from another image (or the host) are not reused here."""
        return f"docker:{self._live().image_id}"

    def __init__(self, **options: Any) -> None:
        box = _Container(validated(DockerOptions, options))
        try:
            box.start()
        except BaseException:
            box.discard()
            raise
        self._init(box, None)

    @classmethod
    def _leased(cls, box: _Container, pool: DockerSandboxPool) -> DockerSandbox:
        self = cls.__new__(cls)
        self._init(box, pool)
        return self

    def _init(self, box: _Container, pool: DockerSandboxPool | None) -> None:
        self._box: _Container | None = box
        self._pool = pool
        self._cap = box.options.limits.output_cap_bytes
        self.network = box.options.network

    @property
    def output_cap_bytes(self) -> int:
        return self._cap

    @property
    def container_name(self) -> str:
        return self._live().name

    def _live(self) -> _Container:
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


class DockerSandboxPool:
    """Containers started ahead of time; ``acquire()`` lends one, ``release()`` resets it.

    A reset kills every process of the sandbox user, wipes ``/workspace``, ``/tmp`` and
    ``/dev/shm`` and re-executes the exec server (tens of ms, versus a few hundred for a cold
    container). ``start()`` (or ``with``) first reaps orphans (:func:`reap_orphans_once`), then
    fills the pool; ``acquire()`` starts it if needed and never blocks on an empty pool (it
    starts one cold); at most ``size`` containers are kept warm, the extra ones are removed on
    release.
    """

    def __init__(self, image: str = EVAL_IMAGE, size: int = 4, **options: Any) -> None:
        pool = f"pool-{uuid.uuid4().hex[:8]}"
        self.options = validated(DockerOptions, {"image": image, "pool": pool, **options})
        self.size = size
        self._idle: deque[_Container] = deque()
        self._lent: set[_Container] = set()
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self.last_reset_s: float | None = None

    def start(self) -> DockerSandboxPool:
        """Reap orphans of dead processes and start ``size`` containers (in parallel)."""
        with self._start_lock:
            if self._executor is not None:
                return self
            reap_orphans_once(self.options.base_url)
            self._executor = ThreadPoolExecutor(max_workers=max(1, min(self.size, 4)))
            futures = [self._executor.submit(self._new_idle) for _ in range(self.size)]
            for fut in futures:
                fut.result()
        return self

    def _new_idle(self) -> None:
        box = _Container(self.options)
        try:
            box.start()
        except BaseException:
            box.discard()
            raise
        with self._lock:
            if not self._closed:
                self._idle.append(box)
                return
        box.remove()

    def _replace(self) -> None:
        """Start a container in place of one whose reset failed (best effort)."""
        with suppress(Exception):
            self._new_idle()

    def acquire(self) -> DockerSandbox:
        """Lend a clean sandbox: a warm one if any is idle, else a cold start."""
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        self.start()
        with self._lock:
            box = self._idle.popleft() if self._idle else None
        if box is None:
            box = _Container(self.options)
            try:
                box.start()
            except BaseException:
                box.discard()
                raise
        with self._lock:
            self._lent.add(box)
        return DockerSandbox._leased(box, self)

    def release(self, sandbox: DockerSandbox) -> None:
        """Same as ``sandbox.close()``: reset its container and keep it warm."""
        sandbox.close()

    def _give_back(self, box: _Container) -> None:
        with self._lock:
            self._lent.discard(box)
            keep = not self._closed and len(self._idle) < self.size
        if keep:
            started = time.perf_counter()
            try:
                box.reset()
            except SandboxError:
                keep = False
                if self._executor is not None:
                    self._executor.submit(self._replace)
            self.last_reset_s = time.perf_counter() - started
        if keep:
            with self._lock:
                if not self._closed:
                    self._idle.append(box)
                    return
        box.remove()

    def close(self) -> None:
        """Remove every container of the pool, idle or lent; idempotent."""
        with self._lock:
            self._closed = True
            boxes = list(self._idle) + list(self._lent)
            self._idle.clear()
            self._lent.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        errors = []
        for box in boxes:
            try:
                box.remove()
            except SandboxError as exc:
                errors.append(str(exc))
        if errors:
            raise SandboxError("; ".join(errors))

    def __enter__(self) -> DockerSandboxPool:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
