"""Replies arrive unchanged: the bytes through the gateway are the bytes fetched directly.

The replay upstream answers the same request with the same bytes and writes streams in odd
pieces (1, 7, 64, 3, 250 bytes), so event boundaries fall anywhere; the gateway must relay
them as they are, and a stream cut by the upstream must reach the client broken.
"""

from __future__ import annotations

import http.client
import json

import pytest

from cudaenv.gateway import Gateway
from tests.gateway.conftest import KEY, open_replay, post
from tests.gateway.upstreams import ReplayServer

BODIES = {
    "/v1/chat/completions": {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                             "stream_options": {"include_usage": True}},
    "/v1/responses": {"model": "m", "input": "hi"},
    "/v1/messages": {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
}  # fmt: skip


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("path", list(BODIES))
def test_bytes_through_the_gateway_equal_direct(
    gateway: Gateway, replay: ReplayServer, path: str, stream: bool
) -> None:
    session = open_replay(gateway, replay)
    body = {**BODIES[path], "stream": stream}
    anthropic = path == "/v1/messages"
    d_status, d_headers, direct = post(replay.origin, path, body, KEY, anthropic=anthropic)
    g_status, g_headers, via = post(
        gateway.base_url, path, body, session.token, anthropic=anthropic
    )
    assert (g_status, via) == (d_status, direct)
    assert g_headers["content-type"] == d_headers["content-type"]
    assert (g_headers.get("cache-control"), "transfer-encoding" in g_headers) == (
        d_headers.get("cache-control"),
        stream,
    )
    assert len(direct) > 200  # a real reply, not two empty bodies
    (call,) = session.calls
    assert call.response_body.encode() == direct and call.response_bytes == len(direct)


def test_a_stream_cut_by_the_upstream_reaches_the_client_broken(gateway: Gateway) -> None:
    with ReplayServer(cut=True) as up:
        session = open_replay(gateway, up)
        host, port = gateway.base_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        body = {**BODIES["/v1/messages"], "stream": True}
        conn.request("POST", "/v1/messages", json.dumps(body), {"x-api-key": session.token})
        resp = conn.getresponse()
        assert resp.status == 200
        with pytest.raises(http.client.IncompleteRead):
            resp.read()
        conn.close()
    (call,) = session.calls
    assert call.error is not None and "cut" in call.error
    assert call.response_bytes > 0
