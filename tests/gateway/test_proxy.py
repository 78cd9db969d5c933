"""Every API shape through the gateway with the real SDKs, against scripted upstreams.

The client holds only the session token; the upstream must see the real key and never the
token; the model override must reach the upstream; each call is captured with its usage.
"""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from cudaenv.gateway import Gateway, Upstream
from tests.agents.anthropic_server import AnthropicServer
from tests.agents.anthropic_server import text as a_text
from tests.agents.openai_stream_server import StreamingScriptedServer
from tests.agents.scripted_server import ScriptedServer, tool_call
from tests.gateway.conftest import KEY, open_replay, post
from tests.gateway.upstreams import ReplayServer

TEXT = "Hello from the replay upstream."
MSG = [{"role": "user", "content": "hi"}]


def _openai(gw: Gateway, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=token, max_retries=0)


def _anthropic(gw: Gateway, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.base_url, api_key=token, max_retries=0)


def _call(api: str, stream: bool, gw: Gateway, token: str) -> str:
    """One SDK call of ``api``; the reply's text."""
    if api == "chat":
        client = _openai(gw, token)
        if not stream:
            return (
                client.chat.completions.create(model="asked", messages=MSG)
                .choices[0]
                .message.content
            )
        chunks = client.chat.completions.create(
            model="asked", messages=MSG, stream=True, stream_options={"include_usage": True}
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    if api == "responses":
        client = _openai(gw, token)
        if not stream:
            return client.responses.create(model="asked", input="hi").output_text
        events = client.responses.create(model="asked", input="hi", stream=True)
        return "".join(e.delta for e in events if e.type == "response.output_text.delta")
    client = _anthropic(gw, token)
    if not stream:
        reply = client.messages.create(model="asked", max_tokens=50, messages=MSG)
        return reply.content[0].text
    with client.messages.stream(model="asked", max_tokens=50, messages=MSG) as events:
        return events.get_final_message().content[0].text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_each_api_through_the_gateway(
    gateway: Gateway, replay: ReplayServer, api: str, stream: bool
) -> None:
    session = open_replay(gateway, replay, model_map={"asked": "served"})
    assert _call(api, stream, gateway, session.token) == TEXT
    (seen,) = replay.requests
    assert seen["body"]["model"] == "served"
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    sent = headers.get("x-api-key") if api == "messages" else headers["authorization"]
    assert sent == (KEY if api == "messages" else f"Bearer {KEY}")
    assert session.token not in json.dumps(seen["headers"]) + seen["raw"].decode()
    (call,) = session.calls
    assert (call.api, call.stream, call.status) == (api, stream, 200)
    assert (call.requested_model, call.model, call.response_model) == ("asked", "served", "served")
    assert call.usage.output_tokens == 30 and call.usage.total >= 150
    assert call.turn is not None
    assert TEXT in json.dumps(call.turn.message)
    assert call.error is None and call.ttfb_s is not None


def test_scripted_openai_servers_through_the_gateway(gateway: Gateway) -> None:
    """The agents' own scripted servers (tool calls, SSE tool-call deltas) pass unchanged."""
    with ScriptedServer([tool_call("bash", command="ls")]) as up:
        session = gateway.open_session(upstream=Upstream(base_url=up.base_url, api_key=KEY))
        reply = _openai(gateway, session.token).chat.completions.create(model="m", messages=MSG)
        assert reply.choices[0].message.tool_calls[0].function.arguments == '{"command": "ls"}'
        assert json.loads(
            up.responses[0]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        ) == {"command": "ls"}
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    with StreamingScriptedServer([tool_call("bash", command="pwd")]) as up:
        session = gateway.open_session(upstream=Upstream(base_url=up.base_url, api_key=KEY))
        chunks = _openai(gateway, session.token).chat.completions.create(
            model="m", messages=MSG, tools=tools, stream=True
        )
        args = "".join(
            c.choices[0].delta.tool_calls[0].function.arguments or ""
            for c in chunks
            if c.choices and c.choices[0].delta.tool_calls
        )
        assert json.loads(args) == {"command": "pwd"}
        (turn,) = session.turns()
        assert turn.message["tool_calls"][0]["function"] == {"name": "bash", "arguments": args}
        assert turn.finish_reason == "tool_calls"


def test_scripted_anthropic_server_through_the_gateway(gateway: Gateway) -> None:
    with AnthropicServer([a_text("from the scripted server")]) as up:
        session = gateway.open_session(
            upstream=Upstream(base_url=up.base_url + "/v1", api_key=KEY), model="claude-x"
        )
        client = _anthropic(gateway, session.token)
        tools = [{"name": "bash", "input_schema": {"type": "object"}}]
        with client.messages.stream(model="m", max_tokens=9, messages=MSG, tools=tools) as s:
            assert s.get_final_message().content[0].text == "from the scripted server"
        assert up.requests[0]["model"] == "claude-x"
        (call,) = session.calls
        assert call.usage.model_dump(exclude={"reported"}) == {
            "input_tokens": 120, "cache_read_tokens": 50, "cache_write_tokens": 10,
            "output_tokens": 30,
        }  # fmt: skip


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_an_unknown_token_gets_the_apis_authentication_error(
    gateway: Gateway, replay: ReplayServer, api: str
) -> None:
    open_replay(gateway, replay)
    error = openai.AuthenticationError if api == "chat" else anthropic.AuthenticationError
    with pytest.raises(error, match="unknown or closed session token"):
        _call(api, False, gateway, "cgw-not-a-session")
    assert replay.requests == []


def test_a_closed_session_is_refused(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay)
    assert _call("chat", False, gateway, session.token) == TEXT
    assert gateway.close_session(session) is session
    with pytest.raises(openai.AuthenticationError):
        _call("chat", False, gateway, session.token)
    assert len(session.calls) == 1 and len(replay.requests) == 1


def test_unknown_endpoints_and_bad_bodies(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay)
    status, _, body = post(gateway.base_url, "/v1/embeddings", {"input": "x"}, session.token)
    assert status == 404 and json.loads(body)["error"]["message"].startswith("cudaenv gateway")
    status, _, body = post(gateway.base_url, "/v1/messages", [], session.token, anthropic=True)  # type: ignore[arg-type]
    assert status == 400 and json.loads(body)["type"] == "error"
    assert replay.requests == []


def test_aux_calls_are_forwarded_but_not_counted(gateway: Gateway, replay: ReplayServer) -> None:
    session = open_replay(gateway, replay, budget={"max_requests": 1})
    count = _anthropic(gateway, session.token).messages.count_tokens(model="m", messages=MSG)
    assert count.input_tokens == 42
    assert _call("messages", False, gateway, session.token) == TEXT
    assert [c.api for c in session.calls] == [None, "messages"]
    assert session.truncation_reason is None


def test_an_unreachable_upstream_is_a_502_in_the_apis_shape(gateway: Gateway) -> None:
    session = gateway.open_session(upstream=Upstream(base_url="http://127.0.0.1:9/v1", api_key=KEY))
    with pytest.raises(anthropic.InternalServerError) as caught:
        _call("messages", False, gateway, session.token)
    assert caught.value.status_code == 502
    assert caught.value.body["error"]["type"] == "api_error"
    (call,) = session.calls
    assert call.status == 502 and "could not be reached" in (call.error or "")
