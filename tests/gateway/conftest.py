"""Gateway fixtures: a running gateway (background thread), a replay upstream, a fake clock."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from cudaenv.gateway import Gateway, Session, Upstream
from tests.gateway.upstreams import ReplayServer

KEY = "sk-upstream-secret-0123456789abcdef"  # the real credential: only the gateway holds it


class FakeClock:
    """A monotonic clock the test moves by hand (budgets without sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gateway(clock: FakeClock) -> Iterator[Gateway]:
    with Gateway(clock=clock) as gw:
        yield gw


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as up:
        yield up


def open_replay(gw: Gateway, up: ReplayServer, **config: Any) -> Session:
    """A session forwarding to ``up`` with the real key."""
    return gw.open_session(upstream=Upstream(base_url=up.base_url, api_key=KEY), **config)


def post(
    origin: str, path: str, body: dict[str, Any], token: str, *, anthropic: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """A raw POST (status, headers, the whole body as received) with ``token`` as the key."""
    host, port = origin.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    auth = {"x-api-key": token} if anthropic else {"authorization": f"Bearer {token}"}
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **auth})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()
