"""The egress story: a sandbox with its own network namespace reaches the gateway and nothing else.

The forwarder runs under a plain ``bwrap --unshare-net`` with only the gateway's Unix socket
(and the forwarder script) bound in, as the local sandbox option will do it. From inside,
through ``http://127.0.0.1:<port>``, the gateway answers a real call; a server on the host's
loopback and one on a non-loopback host address are not reachable; names do not resolve and
the host's nameserver cannot be sent a packet. Each unreachable server is first shown
reachable from the host, so the test can fail.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cudaenv.gateway import Gateway
from cudaenv.gateway.sandboxing import INNER_FORWARDER, INNER_SOCKET, bwrap_args, mounts
from tests.gateway.conftest import open_replay
from tests.gateway.upstreams import ReplayServer

# runs inside the sandbox: start the forwarder, then try every way out; prints one JSON line
INNER = r"""
import json, socket, subprocess, sys, urllib.request
args = json.loads(sys.argv[1])
out = {}
fwd = subprocess.run([sys.executable, "-I", "-S", args["forwarder"], "--socket", args["socket"],
                      "--port", "0", "--background"], capture_output=True, text=True, timeout=30)
port = int(fwd.stdout.split()[0])
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"authorization": "Bearer " + args["token"], "content-type": "application/json"})
with urllib.request.urlopen(req, timeout=30) as resp:
    out["gateway"] = [resp.status, json.loads(resp.read())["choices"][0]["message"]["content"]]

def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__

out["loopback"] = tcp("127.0.0.1", args["loopback_port"])
out["host_address"] = tcp(args["host_ip"], args["host_port"]) if args["host_ip"] else None
try:
    socket.getaddrinfo(args["name"], 443)
    out["dns"] = "resolved"
except OSError as exc:
    out["dns"] = type(exc).__name__
try:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.sendto(b"\0" * 12, (args["nameserver"], 53))
    out["nameserver"] = "sent"
except OSError as exc:
    out["nameserver"] = type(exc).__name__
print(json.dumps(out))
"""


def _bwrap() -> str:
    from cudaenv.sandbox._bwrap import probe  # the test only: which bwrap works here

    found = probe()
    if found.bwrap is None:
        pytest.skip("no working bubblewrap here")
    return found.bwrap.path


def _host_ip() -> str | None:
    """A non-loopback address of this host (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        ip = s.getsockname()[0]
    return None if ip.startswith("127.") else ip


def _nameserver() -> str:
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver" and "." in parts[1]:
            return parts[1]
    return "127.0.0.53"


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        return


def _reachable_from_host(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


def _serve(host: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def host_servers() -> Iterator[dict[str, tuple[str, int] | None]]:
    """A server on the host's loopback and one on a non-loopback address (None: none here)."""
    servers = {"loopback": _serve("127.0.0.1")}
    ip = _host_ip()
    if ip is not None:
        servers["address"] = _serve(ip)
    out: dict[str, tuple[str, int] | None] = {"address": None}
    for kind, server in servers.items():
        host, port = server.server_address[:2]
        assert _reachable_from_host(str(host), int(port))  # the control: reachable from here
        out[kind] = (str(host), int(port))
    yield out
    for server in servers.values():
        server.shutdown()
        server.server_close()


def test_only_the_gateway_is_reachable_from_an_unshared_network(
    gateway: Gateway, replay: ReplayServer, host_servers: dict[str, Any], tmp_path: Path
) -> None:
    bwrap = _bwrap()
    assert gateway.socket_path is not None
    session = open_replay(gateway, replay)
    inner = tmp_path / "inner.py"
    inner.write_text(INNER)
    address = host_servers["address"] or (None, 0)
    args = {
        "forwarder": INNER_FORWARDER, "socket": INNER_SOCKET, "token": session.token,
        "loopback_port": host_servers["loopback"][1], "host_ip": address[0],
        "host_port": address[1], "name": "pypi.org", "nameserver": _nameserver(),
    }  # fmt: skip
    argv = [
        bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-net", "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/tmp", "--tmpfs", "/run", *bwrap_args(gateway.socket_path),
        "--ro-bind", str(inner), "/run/inner.py",
        "--", sys.executable, "-I", "-S", "/run/inner.py", json.dumps(args),
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["gateway"] == [200, "Hello from the replay upstream."]
    assert len(session.calls) == 1 and len(replay.requests) == 1
    assert out["loopback"] == "ConnectionRefusedError"  # the sandbox's own, empty loopback
    if address[0] is not None:
        assert out["host_address"] == "OSError"  # ENETUNREACH: no route to any host address
    assert out["dns"] == "gaierror"
    assert out["nameserver"] == "OSError"  # ENETUNREACH: not even a packet to the resolver


@pytest.mark.docker
def test_a_container_without_a_network_reaches_only_the_gateway(
    gateway: Gateway, replay: ReplayServer, host_servers: dict[str, Any], tmp_path: Path,
    eval_cpu_image: str,
) -> None:  # fmt: skip
    """The same from a Docker container with ``network_mode="none"`` and the socket mounted
    in (the container runs as another uid: the socket must be open to it)."""
    from tests.conftest import need_image

    client: Any = need_image(eval_cpu_image)
    assert gateway.socket_path is not None
    session = open_replay(gateway, replay)
    inner = tmp_path / "inner.py"
    inner.write_text(INNER)
    inner.chmod(0o644)
    address = host_servers["address"] or (None, 0)
    args = {
        "forwarder": INNER_FORWARDER, "socket": INNER_SOCKET, "token": session.token,
        "loopback_port": host_servers["loopback"][1], "host_ip": address[0],
        "host_port": address[1], "name": "pypi.org", "nameserver": _nameserver(),
    }  # fmt: skip
    volumes = {
        host: {"bind": inside, "mode": "ro"} for host, inside in mounts(gateway.socket_path).items()
    }
    volumes[str(inner)] = {"bind": "/run/inner.py", "mode": "ro"}
    out = client.containers.run(
        eval_cpu_image, ["python3", "-I", "-S", "/run/inner.py", json.dumps(args)],
        network_mode="none", volumes=volumes, remove=True, stdout=True, stderr=True,
    )  # fmt: skip
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert result["gateway"] == [200, "Hello from the replay upstream."]
    assert len(session.calls) == 1
    assert result["loopback"] == "ConnectionRefusedError"
    if address[0] is not None:
        assert result["host_address"] == "OSError"
    assert result["dns"] == "gaierror" and result["nameserver"] == "OSError"
