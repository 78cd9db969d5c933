"""Budgets trip: the client gets the API's own error with a clear message, the session keeps
the truncation reason, and the upstream never sees the refused call. Time is a fake clock."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from cudaenv.gateway import TRUNCATION_REASONS, Gateway
from tests.gateway.conftest import FakeClock, open_replay, post
from tests.gateway.test_proxy import TEXT, _call
from tests.gateway.upstreams import ReplayServer

ERRORS = {
    "chat": openai.BadRequestError,
    "responses": openai.BadRequestError,
    "messages": anthropic.BadRequestError,
}


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_max_requests_trips_with_the_apis_error(
    gateway: Gateway, replay: ReplayServer, api: str
) -> None:
    session = open_replay(gateway, replay, budget={"max_requests": 2})
    for _ in range(2):
        assert _call(api, False, gateway, session.token) == TEXT
    with pytest.raises(ERRORS[api], match=r"2 model requests.*truncated: gateway_requests"):
        _call(api, True, gateway, session.token)
    assert session.truncation_reason == "gateway_requests"
    assert len(replay.requests) == 2
    refused = session.calls[-1]
    assert (refused.status, refused.refused, refused.api) == (400, "gateway_requests", api)
    assert session.summary()["refused"] == 1 and session.summary()["requests"] == 2


def test_the_error_bodies_have_each_apis_shape(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay, budget={"max_requests": 1})
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    assert post(gateway.base_url, "/v1/messages", body, session.token, anthropic=True)[0] == 200
    status, headers, raw = post(
        gateway.base_url, "/v1/messages", body, session.token, anthropic=True
    )
    error = json.loads(raw)
    assert (status, headers["content-type"]) == (400, "application/json")
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert "gateway_requests" in error["error"]["message"]
    status, _, raw = post(gateway.base_url, "/v1/chat/completions", body, session.token)
    error = json.loads(raw)["error"]
    assert (status, error["type"], error["code"]) == (
        400,
        "invalid_request_error",
        "budget_exceeded",
    )


def test_max_tokens_counts_every_calls_usage(gateway: Gateway, replay: ReplayServer) -> None:
    # each replay message costs 120 in + 7 cache write + 11 cache read + 30 out = 168 tokens
    session = open_replay(gateway, replay, budget={"max_tokens": 300})
    _call("messages", False, gateway, session.token)
    _call("messages", True, gateway, session.token)  # 168 < 300 when admitted: runs, overruns
    with pytest.raises(anthropic.BadRequestError, match=r"300 tokens \(336 used\)"):
        _call("messages", False, gateway, session.token)
    assert session.truncation_reason == "gateway_tokens"
    assert session.usage.total == 336


def test_wall_time_is_checked_on_the_sessions_clock(
    gateway: Gateway, replay: ReplayServer, clock: FakeClock
) -> None:
    session = open_replay(gateway, replay, budget={"wall_time_s": 60})
    clock.now += 59
    assert _call("chat", False, gateway, session.token) == TEXT
    clock.now += 1
    with pytest.raises(openai.BadRequestError, match=r"wall-time budget of 60 s"):
        _call("chat", False, gateway, session.token)
    assert session.truncation_reason == "gateway_time"
    assert session.remaining_s() == 0


def test_wall_time_also_bounds_a_call_in_flight(gateway: Gateway, clock: FakeClock) -> None:
    with ReplayServer(hang=True) as up:
        session = open_replay(gateway, up, budget={"wall_time_s": 60})
        clock.now += 59.8  # 0.2 s left: the hung call is cut there
        with pytest.raises(anthropic.BadRequestError, match="during this call"):
            _call("messages", False, gateway, session.token)
    assert session.truncation_reason == "gateway_time"
    (call,) = session.calls
    assert call.status == 400 and "gateway_time" in (call.error or "")


def test_the_first_reason_is_kept(gateway: Gateway, replay: ReplayServer, clock: FakeClock) -> None:
    session = open_replay(gateway, replay, budget={"max_requests": 1, "wall_time_s": 10})
    _call("chat", False, gateway, session.token)
    with pytest.raises(openai.BadRequestError):
        _call("chat", False, gateway, session.token)
    clock.now += 11
    with pytest.raises(openai.BadRequestError):
        _call("chat", False, gateway, session.token)
    assert session.truncation_reason == "gateway_requests"
    assert {c.refused for c in session.calls} == {None, "gateway_requests"}
    assert set(TRUNCATION_REASONS) == {"gateway_requests", "gateway_tokens", "gateway_time"}
