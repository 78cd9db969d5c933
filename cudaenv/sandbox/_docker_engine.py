"""The Docker engine as the docker backend uses it: one client per engine URL, errors that say
what went wrong, images looked up (or pulled) once, and the owner labels that orphan reaping
judges containers by.

Why apart: the sandbox, the warm pool and the compile-only siblings all start containers on
one engine, and every entry point reaps the orphans of dead processes once per process and
engine (:func:`reap_orphans_once`) before its first container.
"""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cudaenv.errors import MissingExtraError, SandboxError
from cudaenv.sandbox._owners import Owner

__all__ = [
    "LABEL_OWNER_BOOT",
    "LABEL_OWNER_HOST",
    "LABEL_OWNER_PID",
    "LABEL_OWNER_START",
    "LABEL_POOL",
    "LABEL_RUN_DIR",
    "RUN_DIR_PREFIX",
    "docker_client",
    "docker_sdk",
    "engine_errors",
    "ensure_image",
    "gpu_runtime_hint",
    "owner_labels",
    "reap_orphans",
    "reap_orphans_once",
    "remove_run_dir",
]

LABEL_OWNER_PID = "cudaenv.owner_pid"
LABEL_OWNER_START = "cudaenv.owner_start"
LABEL_OWNER_HOST = "cudaenv.owner_host"
LABEL_OWNER_BOOT = "cudaenv.owner_boot"
LABEL_POOL = "cudaenv.pool"
LABEL_RUN_DIR = "cudaenv.run_dir"
RUN_DIR_PREFIX = "cudaenv-run-"


def docker_sdk() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise MissingExtraError("docker", "docker") from exc
    return docker


@contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Turn docker SDK / transport failures into a SandboxError that names the problem."""
    docker = docker_sdk()
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
def gpu_runtime_hint(gpus: int | list[int | str] | None) -> Iterator[None]:
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


def ensure_image(client: Any, image: str) -> None:
    """The image on this engine, pulled if it is missing; else an error that says so (without
    it, a missing image surfaces as the registry's HTTP error from the implicit pull)."""
    key = (id(client), image)
    if key in _images_seen:
        return
    docker = docker_sdk()
    with engine_errors(f"looking up image {image}"):
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
            docker = docker_sdk()
            with engine_errors("connecting to Docker"):
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
    docker = docker_sdk()
    removed = []
    with engine_errors("reaping orphaned containers"):
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
            remove_run_dir(labels.get(LABEL_RUN_DIR, ""))
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


def remove_run_dir(path: str) -> None:
    p = Path(path)
    if path and p.name.startswith(RUN_DIR_PREFIX) and p.is_dir():
        shutil.rmtree(p, ignore_errors=True)
