"""The gateway's parts on their own: redaction of streams, configs, usage, stream folding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.errors import SpecError
from cudaenv.gateway import Budget, Price, PriceTable, SessionConfig, Upstream, Usage
from cudaenv.gateway.apis import api_of, error_body, family_of, is_aux
from cudaenv.gateway.redact import MARK, Redactor
from cudaenv.gateway.replies import final_body, sse_events, turn_of
from tests.agents.anthropic_server import message, stream_events, tool_use
from tests.agents.openai_stream_server import stream_body
from tests.agents.scripted_server import completion, tool_call

SECRET = "sk-abcdefghijklmnop"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64])
def test_a_secret_cut_anywhere_in_a_stream_is_redacted(size: int) -> None:
    data = f"data: one {SECRET} two\n\ndata: {SECRET}{SECRET}\n\nend sk-ab".encode()
    stream = Redactor([SECRET]).stream()
    out = b"".join(stream.feed(data[i : i + size]) for i in range(0, len(data), size))
    out += stream.flush()
    assert out == data.replace(SECRET.encode(), MARK.encode())


def test_ordinary_chunks_pass_whole_and_at_once() -> None:
    stream = Redactor([SECRET, "short"]).stream()
    chunk = b'data: {"text": "so-so"}\n\n'
    assert stream.feed(chunk) == chunk and stream.flush() == b""
    assert Redactor(["short", None]).text("short") == "short"  # under 8 characters: no secret


def test_upstream_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    up = Upstream(base_url="http://h:1/v1/", api_key_env="GW_TEST_KEY")
    assert up.base_url == "http://h:1/v1"
    with pytest.raises(SpecError, match="GW_TEST_KEY") as caught:
        up.key()
    assert caught.value.field == "api_key_env"
    monkeypatch.setenv("GW_TEST_KEY", SECRET)
    assert up.key() == SECRET
    assert Upstream(base_url="http://h:1", api_key=SECRET).key() == SECRET
    assert SECRET not in repr(Upstream(base_url="http://h:1", api_key=SECRET))
    with pytest.raises(ValueError, match="http"):
        Upstream(base_url="ftp://h")


def test_configs_forbid_unknown_fields() -> None:
    with pytest.raises(ValueError, match="max_request"):
        Budget(max_request=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        Budget(max_tokens=0)
    config = SessionConfig(upstream=Upstream(base_url="http://h:1"), model_map={"a": "b"})
    assert [config.upstream_model(m) for m in ("a", "c", None)] == ["b", "c", None]
    forced = config.model_copy(update={"model": "z"})
    assert forced.upstream_model("a") == "z" and forced.upstream_model(None) == "z"


def test_price_tables_load_and_match(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("gpt-5:\n  input_per_mtok: 1\n  output_per_mtok: 8\n'gpt-*':\n"
                    "  input_per_mtok: 2\n  output_per_mtok: 4\n")  # fmt: skip
    table = PriceTable.load(path)
    assert table.price("gpt-5") == Price(input_per_mtok=1, output_per_mtok=8)
    assert table.price("gpt-4o").input_per_mtok == 2  # type: ignore[union-attr]
    assert table.price("claude") is None and table.price(None) is None
    path.write_text(json.dumps({"m": {"input_per_mtok": -1, "output_per_mtok": 1}}))
    with pytest.raises(SpecError, match="bad price table") as caught:
        PriceTable.load(path.rename(tmp_path / "prices.json"))
    assert caught.value.field == "m.input_per_mtok"


def test_paths_and_error_shapes() -> None:
    assert api_of("POST", "/v1/chat/completions") == "chat"
    assert api_of("POST", "/responses") == "responses"  # a base URL without /v1
    assert api_of("GET", "/v1/messages") is None
    assert is_aux("POST", "/v1/messages/count_tokens") and is_aux("GET", "/v1/models/x")
    assert not is_aux("POST", "/v1/embeddings")
    assert family_of("/v1/messages/count_tokens") == "anthropic"
    assert json.loads(error_body("openai", 502, "down"))["error"]["type"] == "server_error"
    assert json.loads(error_body("anthropic", 504, "slow"))["error"]["type"] == "api_error"


def test_usage_of_each_api() -> None:
    chat = Usage.of("chat", {"prompt_tokens": 100, "completion_tokens": 9,
                             "prompt_tokens_details": {"cached_tokens": 60}})  # fmt: skip
    assert (chat.input_tokens, chat.cache_read_tokens, chat.output_tokens) == (40, 60, 9)
    resp = Usage.of("responses", {"input_tokens": 5, "output_tokens": 2})
    assert resp.total == 7 and resp.reported
    assert not Usage.of("messages", None).reported
    assert (chat + resp).total == 116


def test_folded_streams_equal_the_whole_replies() -> None:
    """The agents' scripted servers write the same reply whole and as events: folding the
    events gives back the whole reply's message."""
    reply = {**tool_call("bash", command="echo hi; ls -la"), "content": "Let me look."}
    whole = completion(reply, "m")
    folded = final_body("chat", stream_body(reply, "m", (100, 20)), streamed=True)
    assert folded is not None
    got, want = folded["choices"][0]["message"], whole["choices"][0]["message"]
    assert got["content"] == want["content"]
    assert [c["function"] for c in got["tool_calls"]] == [c["function"] for c in want["tool_calls"]]
    assert folded["usage"] == whole["usage"]
    turn = turn_of("chat", folded)
    assert (
        turn.finish_reason == "tool_calls" and turn.message["tool_calls"][0]["type"] == "function"
    )

    a_reply = tool_use("bash", command="nvcc -o x x.cu && ./x")
    raw = b"".join(stream_events(a_reply, "claude", {"input_tokens": 3, "output_tokens": 4}))
    events = [name for name, _ in sse_events(raw)]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    a_folded = final_body("messages", raw, streamed=True)
    assert a_folded is not None
    a_whole = message(a_reply, "claude", {"input_tokens": 3, "output_tokens": 4})
    strip = [{k: v for k, v in b.items() if k != "id"} for b in a_whole["content"]]
    assert [{k: v for k, v in b.items() if k != "id"} for b in a_folded["content"]] == strip
    assert a_folded["stop_reason"] == "tool_use" and a_folded["usage"]["output_tokens"] == 4
    a_turn = turn_of("messages", a_folded)
    assert a_turn.message["content"][0]["input"] == {"command": "nvcc -o x x.cu && ./x"}
