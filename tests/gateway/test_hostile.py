"""The gateway against a hostile client (whatever runs in a sandbox), over real sockets.

Paths outside the closed set of routes (``..``, percent-escaped separators) never reach the
upstream, which would get them with the real key; only allow-listed request headers go up;
the session's model is pinned; concurrent calls cannot spend the same budget tokens; a body
over the session's limit is refused as soon as that much has arrived (never read whole), and
bodies many times the limit do not grow the gateway's process; a session's requests wait
for one of its slots; a 200 that is not JSON or reports no usage is recorded as an error.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cudaenv.agents.gateway_link import EpisodeLink
from cudaenv.gateway import Gateway
from tests.gateway.conftest import KEY, open_replay, post
from tests.gateway.upstreams import ReplayServer

HANG_GUARD_S = 60
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a session's own Unix socket (what a sandbox's forwarder connects to)."""

    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=HANG_GUARD_S)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(HANG_GUARD_S)
        self.sock.connect(self._path)


def _recv(sock: socket.socket) -> bytes:
    """What came back before the gateway closed the connection (a reset after it is fine)."""
    try:
        return sock.recv(4096)
    except ConnectionResetError:
        return b""


def request(
    gw: Gateway, method: str, path: str, token: str, body: Any = None, **headers: str
) -> tuple[int, bytes]:
    host, port = gw.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=HANG_GUARD_S)
    data = json.dumps(body) if body is not None else None
    try:
        conn.request(method, path, data, {"authorization": f"Bearer {token}", **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


TRAVERSALS = [
    "/v1/models/../../x",
    "/v1/models/%2e%2e/%2e%2e/x",
    "/v1/models/..%2f..%2fx",
    "/v1/models/%2E%2E%2Fadmin",
    "/v1/models/./../../x",
    "/v1//models",
    "/v1/models/a/b",
    "/v1/chat/completions/../../admin",
    "/v1/models\\..\\x",
    "/admin",
]


def test_only_the_closed_set_of_routes_reaches_the_upstream(
    gateway: Gateway, replay: ReplayServer
) -> None:
    session = open_replay(gateway, replay)
    for path in TRAVERSALS:
        status, _ = request(gateway, "GET", path, session.token)
        assert status == 404, path
    assert replay.requests == []  # nothing reached it, with or without the key
    assert all(c.status == 404 and c.fault == "agent" for c in session.calls)
    assert request(gateway, "GET", "/v1/models", session.token)[0] == 200
    status, body = request(gateway, "GET", "/v1/models/gpt-x.1", session.token)
    assert status == 200 and json.loads(body)["id"] == "gpt-x.1"
    assert [r["path"] for r in replay.requests] == ["/v1/models", "/v1/models/gpt-x.1"]


def test_only_allow_listed_headers_reach_the_upstream(
    gateway: Gateway, replay: ReplayServer
) -> None:
    session = open_replay(gateway, replay)
    sent = {"OpenAI-Organization": "org-evil", "OpenAI-Project": "proj-evil",
            "X-Forwarded-For": "1.2.3.4", "Cookie": "a=b", "anthropic-version": "2023-06-01",
            "content-type": "application/json"}  # fmt: skip
    status, _ = request(gateway, "POST", "/v1/chat/completions", session.token, CHAT, **sent)
    assert status == 200
    got = {k.lower(): v for k, v in replay.requests[0]["headers"].items()}
    assert got["authorization"] == f"Bearer {KEY}" and got["anthropic-version"] == "2023-06-01"
    for name in ("openai-organization", "openai-project", "x-forwarded-for", "cookie"):
        assert name not in got


def test_an_agents_session_pins_its_model(gateway: Gateway, replay: ReplayServer) -> None:
    link = EpisodeLink(family="openai", base_url=replay.base_url, api_key=KEY,
                       model="pinned-model", gateway=gateway)  # fmt: skip
    try:
        assert link.session.socket_path is not None
        conn = UnixHTTPConnection(str(link.session.socket_path))
        body = {**CHAT, "model": "some-expensive-model"}
        conn.request("POST", "/v1/chat/completions", json.dumps(body),
                     {"authorization": f"Bearer {link.token}"})  # fmt: skip
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        link.close()
    assert [r["body"]["model"] for r in replay.requests] == ["pinned-model"]
    assert link.session.calls[0].requested_model == "some-expensive-model"


def test_a_sessions_socket_takes_only_its_own_token(gateway: Gateway, replay: ReplayServer) -> None:
    mine, other = open_replay(gateway, replay), open_replay(gateway, replay)
    assert mine.socket_path is not None and mine.socket_path != other.socket_path
    for token, want in ((other.token, 401), (mine.token, 200)):
        conn = UnixHTTPConnection(str(mine.socket_path))
        conn.request("POST", "/v1/chat/completions", json.dumps(CHAT),
                     {"authorization": f"Bearer {token}"})  # fmt: skip
        assert conn.getresponse().status == want
        conn.close()


def test_concurrent_calls_cannot_spend_the_same_tokens(gateway: Gateway) -> None:
    gate = threading.Event()
    with ReplayServer(gate=gate) as up:
        session = open_replay(gateway, up, budget={"max_tokens": 150})
        body = {**CHAT, "max_tokens": 50}
        with ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(post, gateway.base_url, "/v1/chat/completions", body,
                                   session.token) for _ in range(12)]  # fmt: skip
            deadline = time.monotonic() + HANG_GUARD_S
            while len(up.requests) + sum(f.done() for f in futures) < 12:
                assert time.monotonic() < deadline, "the calls never all arrived"
                time.sleep(0.01)
            gate.set()
            statuses = sorted(f.result()[0] for f in futures)
    assert statuses == [200] * 3 + [400] * 9  # 3 x 50 reserved: the rest refused at once
    assert [r["body"]["max_tokens"] for r in up.requests] == [50, 50, 50]
    assert session.truncation_reason == "gateway_tokens"


def test_a_calls_output_limit_is_capped_to_what_is_left(gateway: Gateway) -> None:
    with ReplayServer() as up:
        session = open_replay(gateway, up, budget={"max_tokens": 500})
        post(gateway.base_url, "/v1/chat/completions", CHAT, session.token)  # sets none
        post(gateway.base_url, "/v1/messages", {**CHAT, "max_tokens": 1000}, session.token,
             anthropic=True)  # fmt: skip
        # the first reserved all 500 and settled at its usage (120 + 30): 350 left
        assert [r["body"]["max_tokens"] for r in up.requests] == [500, 350]


def test_a_usage_less_reply_keeps_its_reservation(gateway: Gateway) -> None:
    reply = {"id": "c", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}  # fmt: skip
    with ReplayServer(fixed=json.dumps(reply).encode()) as up:
        session = open_replay(gateway, up, budget={"max_tokens": 100})
        post(gateway.base_url, "/v1/chat/completions", {**CHAT, "max_tokens": 60}, session.token)
        post(gateway.base_url, "/v1/chat/completions", {**CHAT, "max_tokens": 60}, session.token)
        assert [r["body"]["max_tokens"] for r in up.requests] == [60, 40]
    first = session.calls[0]
    assert first.status == 200 and "without usage" in (first.error or "")


def test_a_200_that_is_not_json_is_an_infrastructure_error(gateway: Gateway) -> None:
    with ReplayServer(fixed=b"<html>502 Bad Gateway</html>") as up:
        session = open_replay(gateway, up)
        status, _, body = post(gateway.base_url, "/v1/chat/completions", CHAT, session.token)
    assert status == 200 and b"<html>" in body  # the client gets what the upstream sent
    (call,) = session.calls
    assert "not JSON" in (call.error or "") and call.fault == "infrastructure"
    assert session.infrastructure_fault() is not None


def test_an_oversized_body_is_refused_before_it_ends(
    gateway: Gateway, replay: ReplayServer
) -> None:
    session = open_replay(gateway, replay, limits={"max_body_bytes": 64 * 1024})
    host, port = gateway.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=HANG_GUARD_S) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {session.token}\r\n".encode()
            + b"Transfer-Encoding: chunked\r\n\r\n"
        )
        piece = b"x" * 32 * 1024
        for _ in range(8):  # 256 KiB, and never the last chunk: the body does not end
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        answer = _recv(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert replay.requests == []
    status, _ = request(gateway, "POST", "/v1/chat/completions", session.token,
                        {**CHAT, "pad": "y" * 100_000})  # fmt: skip
    assert status == 413  # a declared length over the limit: refused before reading


def test_a_sessions_requests_wait_for_its_slots(gateway: Gateway) -> None:
    gate = threading.Event()
    with ReplayServer(gate=gate) as up:
        session = open_replay(gateway, up, limits={"max_concurrent_requests": 2})
        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(post, gateway.base_url, "/v1/chat/completions", CHAT,
                                   session.token) for _ in range(6)]  # fmt: skip
            deadline = time.monotonic() + HANG_GUARD_S
            while len(up.requests) < 2:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            gate.set()
            statuses = [f.result()[0] for f in futures]
    assert statuses == [200] * 6 and up.max_in_flight == 2


HOST = """
import json, sys
from cudaenv.gateway import Gateway, Upstream
with Gateway() as gw:
    try:
        s = gw.open_session(upstream=Upstream(base_url=sys.argv[1]),
                            limits={"max_body_bytes": 4 << 20})
    except Exception:  # a gateway without per-session limits
        s = gw.open_session(upstream=Upstream(base_url=sys.argv[1]))
    print(json.dumps({"port": gw.port, "token": s.token}), flush=True)
    sys.stdin.readline()
"""


def _peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def _send_chunked(port: int, token: str, total: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD_S) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                     + f"Authorization: Bearer {token}\r\n".encode()
                     + b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
        piece = b'{"model": "m", "messages": [], "pad": "' + b"z" * (1 << 20)
        sent = 0
        try:
            while sent < total:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
                piece = b"z" * (1 << 20)
            sock.sendall(b'5\r\n"}   \r\n0\r\n\r\n')
        except OSError:
            pass  # refused and closed mid-body: what a limit does
        return _recv(sock)


def test_bodies_far_over_the_limit_do_not_grow_the_host(replay: ReplayServer) -> None:
    """Three concurrent 16 MB bodies against a 4 MiB limit: the gateway's process (its own, so
    its peak memory is its own) grows by well under the bodies' size."""
    host = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOST), replay.base_url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert host.stdout is not None and host.stdin is not None
        info = json.loads(host.stdout.readline())
        with open(f"/proc/{host.pid}/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak
        before = _peak_kb(host.pid)
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: _send_chunked(info["port"], info["token"], 16 << 20),
                                    range(3)))  # fmt: skip
        grown_mb = (_peak_kb(host.pid) - before) / 1024
        assert grown_mb < 40, f"the gateway grew by {grown_mb:.0f} MB for 48 MB of bodies"
        assert all(a.startswith(b"HTTP/1.1 413") for a in answers), answers
        assert replay.requests == []
    finally:
        host.kill()
        host.wait()


FLOOD_HOST = """
import json, os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
from cudaenv.gateway import Gateway, Upstream
with Gateway() as gw:
    up = Upstream(base_url=sys.argv[1])
    try:
        flooded = gw.open_session(upstream=up, limits={"max_connections": 16})
    except Exception:  # a gateway without per-session limits
        flooded = gw.open_session(upstream=up)
    other = gw.open_session(upstream=up)
    # the socket this session's sandbox would get
    sandbox_socket = getattr(flooded, "socket_path", None) or gw.socket_path
    print(json.dumps({"port": gw.port, "socket": str(sandbox_socket),
                      "token": other.token}), flush=True)
    for line in sys.stdin:
        try:
            files = [open(os.devnull) for _ in range(16)]
            [f.close() for f in files]
            ok = True
        except OSError:
            ok = False
        print(json.dumps({"files": ok, "refused": getattr(flooded, "refused_connections", -1),
                          "open": getattr(getattr(gw, "tally", None), "open", -1)}), flush=True)
"""

FLOODER = """
import resource, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    held.append(s)
print(len(held), flush=True)
sys.stdin.readline()
"""


@pytest.mark.serial
def test_a_connection_flood_cannot_exhaust_the_hosts_descriptors(replay: ReplayServer) -> None:
    """Serial (it opens hundreds of connections), but bounded and safe on a shared machine:
    the gateway and the flooder are child processes with their own low descriptor limits."""
    host = subprocess.Popen([sys.executable, "-c", textwrap.dedent(FLOOD_HOST), replay.base_url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    flood = None
    try:
        assert host.stdout is not None and host.stdin is not None
        info = json.loads(host.stdout.readline())
        flood = subprocess.Popen([sys.executable, "-c", textwrap.dedent(FLOODER), info["socket"],
                                  "600"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert flood.stdout is not None
        assert int(flood.stdout.readline()) == 600  # all connected: they were accepted, most closed
        deadline = time.monotonic() + HANG_GUARD_S
        while True:  # until the gateway has taken every queued connection
            host.stdin.write("stats\n")
            host.stdin.flush()
            stats = json.loads(host.stdout.readline())
            assert stats["files"], "the host could not open a file"
            if stats["refused"] + stats["open"] >= 600 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert stats["refused"] >= 600 - 16 and stats["open"] <= 16
        status, _, _ = post(f"http://127.0.0.1:{info['port']}", "/v1/chat/completions", CHAT,
                            info["token"])  # fmt: skip
        assert status == 200  # another session is served as usual
    finally:
        for proc in (flood, host):
            if proc is not None:
                proc.kill()
                proc.wait()


def test_closing_a_session_closes_its_socket(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay)
    path = session.socket_path
    assert path is not None and Path(path).exists()
    gateway.close_session(session)
    assert not os.path.exists(path)
    with pytest.raises(OSError), socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
