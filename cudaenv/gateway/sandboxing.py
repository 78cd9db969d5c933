"""How a sandbox without a network reaches the gateway: two read-only mounts and one command.

The sandbox gets its own network namespace (bubblewrap ``--unshare-net``, Docker
``network_mode="none"``): a loopback and nothing else, so no host address, no host loopback
service and no DNS. Into it go, read-only, the gateway's Unix socket and the forwarder script
at fixed paths (:func:`mounts`); before the CLI starts, :func:`forwarder_command` listens on
the sandbox's own ``127.0.0.1:PORT`` and relays to the socket; the CLI is pointed at
:func:`base_url` with the session token as its key. The sandbox package cannot import this
one (imports point the other way), so it takes the mounts as plain ``{host: inside}`` paths.

>>> base_url("anthropic"), base_url("openai")
('http://127.0.0.1:4480', 'http://127.0.0.1:4480/v1')
>>> bwrap_args("/tmp/gw/gateway.sock")[:3]
['--ro-bind', '/tmp/gw/gateway.sock', '/run/cudaenv-gateway/gateway.sock']
"""

from __future__ import annotations

import shlex
from pathlib import Path

from cudaenv.gateway.apis import Family

__all__ = [
    "INNER_FORWARDER",
    "INNER_SOCKET",
    "PORT",
    "base_url",
    "bwrap_args",
    "forwarder_command",
    "mounts",
]

INNER_DIR = "/run/cudaenv-gateway"
INNER_SOCKET = f"{INNER_DIR}/gateway.sock"
INNER_FORWARDER = f"{INNER_DIR}/forwarder.py"
PORT = 4480  # on the sandbox's own loopback: any port is free there
FORWARDER = Path(__file__).with_name("forwarder.py")


def mounts(socket_path: str | Path) -> dict[str, str]:
    """Read-only mounts, host path -> path inside the sandbox."""
    return {str(socket_path): INNER_SOCKET, str(FORWARDER): INNER_FORWARDER}


def bwrap_args(socket_path: str | Path) -> list[str]:
    """The bubblewrap arguments of :func:`mounts`; they must follow the ``--tmpfs /run``
    (bwrap then makes their mount points in it) and precede any ``--remount-ro /run``."""
    out: list[str] = []
    for host, inside in mounts(socket_path).items():
        out += ["--ro-bind", host, inside]
    return out


def forwarder_command(python: str = "python3", port: int = PORT) -> str:
    """Shell command starting the forwarder in the background; it returns once listening."""
    argv = [python, "-I", "-S", INNER_FORWARDER, "--socket", INNER_SOCKET, "--port", str(port)]
    return shlex.join([*argv, "--background"]) + " >/dev/null"


def base_url(family: Family, port: int = PORT) -> str:
    """The URL a CLI inside is given: the origin for Anthropic clients, ``/v1`` for OpenAI."""
    origin = f"http://127.0.0.1:{port}"
    return origin if family == "anthropic" else f"{origin}/v1"
