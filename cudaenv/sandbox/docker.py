"""Docker backend: one locked-down container per sandbox, plus a warm pool.

Why a resident exec server: ``docker exec`` costs 36-52 ms a command, too slow for agents
that issue thousands of small commands. Each container runs ``_exec_server.py`` (read-only
bind mount) as its main process under ``init``; it listens on a unix socket in a per-container
host directory bind-mounted at ``/run/cudaenv``, so a command costs a socket round trip.
This needs a Docker engine on this host (bind mounts of local paths); remote engines are not
supported.

Trust. The exec server runs as root of the container with only CAP_SETUID, CAP_SETGID and
CAP_KILL (``cap_drop=ALL`` plus those) and is not dumpable; every command runs as uid 1000
with no capabilities and ``no-new-privileges``. The sandbox user can therefore not ptrace the
server, read its memory or /proc entries, signal it, or reach its socket directory (0700, or
sticky where the host is not root). Every reply is checked to come from the server's host pid
and uid (``SO_PEERCRED``, as first seen before anything of the user's ran). A container is
used by one holder only: closing it removes it (a pool removes it in the background and
starts a new one), never resets it, so each episode and each grading gets new pid, IPC,
mount and network namespaces, and nothing an agent did in one container reaches a grading.

Containers have a read-only root, tmpfs ``/workspace`` and ``/tmp``, no network unless
asked, and the memory, pids and ulimit caps of :class:`SandboxLimits`. They carry owner labels (``cudaenv.owner_pid``, its start
time, ``cudaenv.owner_boot``, ``cudaenv.owner_host``) so that :func:`reap_orphans` can remove
what a dead process left behind (a SIGKILLed run never cleans up): every entry point that
starts a container (a sandbox, a pool, the grader's build containers) reaps once per process
and engine, with one label-filtered list, before its first container.

Modules: the engine (client, errors, labels, reaping) is ``_docker_engine``, one container's
lifecycle ``_container``, the Sandbox API ``_docker_sandbox``, the warm pool ``docker_pool``;
this module is the backend's public face (what ``cudaenv.sandbox`` and callers import).
"""

from __future__ import annotations

from cudaenv.sandbox._container import SANDBOX_UID
from cudaenv.sandbox._docker_engine import (
    LABEL_OWNER_BOOT,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    LABEL_POOL,
    LABEL_RUN_DIR,
    docker_client,
    owner_labels,
    reap_orphans,
    reap_orphans_once,
)
from cudaenv.sandbox._docker_sandbox import DockerSandbox, sibling_options
from cudaenv.sandbox.docker_pool import DockerSandboxPool
from cudaenv.sandbox.options import EVAL_IMAGE, DockerOptions

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
