"""The forwarder relays TCP to the gateway's Unix socket unchanged, streams and large bodies too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cudaenv.gateway import FORWARDER, Gateway
from tests.gateway.conftest import KEY, open_replay, post
from tests.gateway.upstreams import ReplayServer

BODY = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def forwarded(gateway: Gateway) -> Iterator[str]:
    """The origin of a forwarder (``--port 0``) relaying to ``gateway``'s socket."""
    assert gateway.socket_path is not None
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(FORWARDER), "--socket", str(gateway.socket_path),
         "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[0])
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_forwarder_relays_bytes_unchanged(
    gateway: Gateway, replay: ReplayServer, forwarded: str, stream: bool
) -> None:
    session = open_replay(gateway, replay)
    body = {**BODY, "stream": stream}
    direct = post(replay.origin, "/v1/messages", body, KEY, anthropic=True)
    relayed = post(forwarded, "/v1/messages", body, session.token, anthropic=True)
    assert relayed[0] == direct[0] == 200
    assert relayed[2] == direct[2]


def test_a_large_request_crosses_whole(
    gateway: Gateway, replay: ReplayServer, forwarded: str
) -> None:
    session = open_replay(gateway, replay)
    big = {**BODY, "messages": [{"role": "user", "content": "y" * 3_000_000}]}
    assert post(forwarded, "/v1/messages", big, session.token, anthropic=True)[0] == 200
    assert replay.requests[0]["body"] == big


def test_background_returns_once_listening(gateway: Gateway, replay: ReplayServer) -> None:
    assert gateway.socket_path is not None
    run = subprocess.run(
        [sys.executable, "-I", "-S", str(FORWARDER), "--socket", str(gateway.socket_path),
         "--port", "0", "--background"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    port, pid = map(int, run.stdout.split())
    session = open_replay(gateway, replay)
    try:
        assert post(f"http://127.0.0.1:{port}", "/v1/messages", BODY, session.token,
                    anthropic=True)[0] == 200  # fmt: skip
    finally:
        os.kill(pid, signal.SIGTERM)


def test_a_busy_port_is_an_error(gateway: Gateway, forwarded: str) -> None:
    port = forwarded.rsplit(":", 1)[1]
    run = subprocess.run(
        [sys.executable, "-I", "-S", str(FORWARDER), "--socket", str(gateway.socket_path),
         "--port", port],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1 and "cannot listen" in run.stderr
