"""Every call is captured: token ids and logprobs per turn in the training agent's shape,
capped and redacted bodies, usage and cost; the key never reaches the client or a record."""

from __future__ import annotations

import json

import openai

from cudaenv.agents.turns import turn_from_response
from cudaenv.gateway import Gateway, Price, PriceTable, Upstream
from tests.agents.scripted_server import ScriptedServer, text, tool_call
from tests.gateway.conftest import KEY, open_replay, post
from tests.gateway.upstreams import ReplayServer, prompt_ids

MSG = [{"role": "user", "content": "hi"}]
TEXT = "Hello from the replay upstream."


def test_token_fields_are_asked_for_and_captured_per_turn(gateway: Gateway) -> None:
    """The client asks for no token data; the session adds what the training agent asks for,
    and each turn equals what the training agent would record from the same response."""
    script = [tool_call("bash", command="ls"), text("done")]
    with ScriptedServer(script) as up:
        session = gateway.open_session(
            upstream=Upstream(base_url=up.base_url, api_key=KEY), token_fields=True
        )
        client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=session.token)
        for _ in script:
            client.chat.completions.create(model="m", messages=MSG)
        assert all(r["logprobs"] is True and r["return_token_ids"] is True for r in up.requests)
        turns = session.turns()
        assert turns == [turn_from_response(r) for r in up.responses]
    assert turns[0].completion_token_ids == [ord(c) for c in '{"command": "ls"}']
    assert turns[1].completion_logprobs == [-0.01 * (i + 1) for i in range(4)]
    assert turns[0].prompt_token_ids and turns[0].extra == {
        "kv_transfer_params": {"scripted": True}
    }


def test_a_streamed_turn_folds_token_ids_and_logprobs(
    gateway: Gateway, replay: ReplayServer
) -> None:
    session = open_replay(gateway, replay, token_fields=True)
    body = {
        "model": "m",
        "messages": MSG,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, _, raw = post(gateway.base_url, "/v1/chat/completions", body, session.token)
    assert status == 200 and raw.endswith(b"data: [DONE]\n\n")
    (turn,) = session.turns()
    whole = json.loads(replay.reply("/v1/chat/completions", {**body, "stream": False,
                                    "logprobs": True, "return_token_ids": True})[0])  # fmt: skip
    expected = turn_from_response(whole)
    assert turn.completion_token_ids == expected.completion_token_ids == [ord(c) for c in TEXT]
    assert turn.completion_logprobs == expected.completion_logprobs
    assert turn.prompt_token_ids == prompt_ids(body)
    assert turn.message == {"role": "assistant", "content": TEXT}
    assert turn.finish_reason == "stop"


def test_responses_logprobs_are_captured(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay, extra_body={"include": ["message.output_text.logprobs"]})
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=session.token)
    events = client.responses.create(model="m", input="hi", stream=True)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TEXT
    (turn,) = session.turns()
    assert turn.completion_logprobs == [-0.5 / (i + 1) for i in range(len(TEXT))]
    assert turn.message["output"][0]["content"][0]["text"] == TEXT
    assert turn.finish_reason == "completed"
    assert replay.requests[0]["body"]["include"] == ["message.output_text.logprobs"]


def test_extra_body_none_removes_a_key(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay, extra_body={"temperature": None, "seed": 7})
    body = {"model": "m", "messages": MSG, "temperature": 0.3}
    post(gateway.base_url, "/v1/chat/completions", body, session.token)
    assert replay.requests[0]["body"] == {"model": "m", "messages": MSG, "seed": 7}


def test_bodies_are_capped(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay, body_cap_bytes=100)
    big = [{"role": "user", "content": "x" * 5000}]
    post(gateway.base_url, "/v1/chat/completions", {"model": "m", "messages": big}, session.token)
    (call,) = session.calls
    assert call.request_truncated and len(call.request_body) == 100
    assert call.request_bytes > 5000
    assert call.response_truncated and call.response_bytes > 100
    assert call.turn is not None and call.turn.message["content"] == TEXT  # read from it all


def test_cost_from_the_price_table(gateway: Gateway, replay: ReplayServer) -> None:
    prices = PriceTable(
        prices={
            "claude-*": Price(input_per_mtok=3, output_per_mtok=15, cache_read_per_mtok=0.3,
                              cache_write_per_mtok=3.75),
            "gpt-*": Price(input_per_mtok=1, output_per_mtok=2),
        }
    )  # fmt: skip
    session = open_replay(gateway, replay, model="claude-test", prices=prices)
    body = {"model": "m", "max_tokens": 5, "messages": MSG}
    post(gateway.base_url, "/v1/messages", body, session.token, anthropic=True)
    post(gateway.base_url, "/v1/messages", {**body, "stream": True}, session.token, anthropic=True)
    one = (120 * 3 + 30 * 15 + 11 * 0.3 + 7 * 3.75) / 1e6
    assert [c.cost_usd for c in session.calls] == [one, one]
    assert session.cost_usd == 2 * one
    summary = session.summary()
    assert summary["cost_usd"] == 2 * one and summary["unpriced_calls"] == 0
    assert summary["usage"] == {"input_tokens": 240, "cache_read_tokens": 22,
                                "cache_write_tokens": 14, "output_tokens": 60, "total_tokens": 336}  # fmt: skip
    unpriced = open_replay(gateway, replay, model="other", prices=prices)
    post(gateway.base_url, "/v1/messages", body, unpriced.token, anthropic=True)
    assert unpriced.cost_usd is None and unpriced.summary()["unpriced_calls"] == 1


def test_the_key_never_reaches_the_client_or_a_record(gateway: Gateway) -> None:
    """A leaky upstream echoes the credential it got (a header, the body, a stream event cut
    in pieces across writes): the client and the records see ``[redacted]`` instead."""
    with ReplayServer(echo_auth=True) as up:
        session = open_replay(gateway, up)
        seen = []
        for path, anthropic in (("/v1/chat/completions", False), ("/v1/messages", True)):
            for stream in (False, True):
                body = {"model": "m", "max_tokens": 5, "messages": MSG, "stream": stream}
                status, headers, raw = post(gateway.base_url, path, body, session.token,
                                            anthropic=anthropic)  # fmt: skip
                assert status == 200
                seen.append(json.dumps(headers).encode() + raw)
        assert all(KEY in json.dumps(r["headers"]) for r in up.requests)  # the upstream had it
    for blob in seen:
        assert KEY.encode() not in blob and b"[redacted]" in blob
    records = json.dumps([c.model_dump(mode="json") for c in session.calls])
    assert KEY not in records and "[redacted]" in records
    assert session.token not in records
    assert KEY not in repr(session.config) and KEY not in session.config.model_dump_json()


def test_records_are_json(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay)
    post(gateway.base_url, "/v1/responses", {"model": "m", "input": "hi"}, session.token)
    (call,) = session.calls
    again = type(call).model_validate_json(call.model_dump_json())
    assert again == call
    assert json.loads(json.dumps(session.summary()))["requests"] == 1


def test_a_stream_without_usage_is_asked_for_it_and_counted(
    gateway: Gateway, replay: ReplayServer
) -> None:
    """A client streaming chat without ``include_usage`` would report no tokens: the session
    asks for them, so the call's usage is recorded and a token budget sees it."""
    session = open_replay(gateway, replay, budget={"max_tokens": 1})
    body = {"model": "m", "messages": MSG, "stream": True, "stream_options": {"x": 1}}
    status, _, raw = post(gateway.base_url, "/v1/chat/completions", body, session.token)
    assert status == 200 and b'"usage"' in raw
    assert replay.requests[0]["body"]["stream_options"] == {"x": 1, "include_usage": True}
    (call,) = session.calls
    assert call.usage.reported and call.usage.output_tokens > 0
    status, _, raw = post(gateway.base_url, "/v1/chat/completions", body, session.token)
    assert status == 400 and b"budget" in raw  # the budget counted the streamed call's tokens


def test_stream_usage_off_forwards_the_clients_stream_options(
    gateway: Gateway, replay: ReplayServer
) -> None:
    session = open_replay(gateway, replay, stream_usage=False)
    body = {"model": "m", "messages": MSG, "stream": True}
    status, _, raw = post(gateway.base_url, "/v1/chat/completions", body, session.token)
    assert status == 200 and b'"usage"' not in raw
    assert "stream_options" not in replay.requests[0]["body"]
    (call,) = session.calls
    assert not call.usage.reported and call.usage.total == 0
