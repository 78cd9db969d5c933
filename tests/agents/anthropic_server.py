"""A scripted model server speaking the real Anthropic Messages API, streaming included.

claude-code is pointed at it with ``ANTHROPIC_BASE_URL``: stdlib ``http.server`` on 127.0.0.1,
an ephemeral port, a background thread. ``POST /v1/messages`` answers with a JSON message, or
with the server-sent events the real API sends when the body has ``"stream": true``
(message_start, content_block_start/delta/stop for text and tool_use blocks, with the tool
input cut into ``input_json_delta`` pieces, message_delta with the stop reason and usage,
message_stop). Script turns are played in order to the requests that carry ``tools`` (the
agent loop); side requests without tools (titles, topic checks) get a short text and do not
use up the script. ``POST /v1/messages/count_tokens`` answers a rough count. Every request
body is recorded. ``hang=True`` accepts requests and never answers them (a hung model).

File tools want absolute paths, and the agent's working directory (``/workspace`` under
bubblewrap, a host path otherwise) is only known from its system prompt, so ``{cwd}`` in a
scripted tool input is replaced by the directory the request's prompt names.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count()
_CWD = re.compile(r"(?:Primary working directory|Working directory): *([^\s\\\"<]+)")


def request_cwd(body: dict[str, Any]) -> str | None:
    """The working directory an agent's request states in its prompt, if any."""
    found = _CWD.search(json.dumps(body, ensure_ascii=False))
    return found.group(1) if found else None


def fill_cwd(value: Any, cwd: str | None) -> Any:
    """``value`` with every ``{cwd}`` in its strings replaced (untouched when cwd is None)."""
    if cwd is None:
        return value
    if isinstance(value, str):
        return value.replace("{cwd}", cwd)
    if isinstance(value, dict):
        return {k: fill_cwd(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_cwd(v, cwd) for v in value]
    return value


def tool_use(name: str, **input: Any) -> dict[str, Any]:
    """A scripted turn with one tool_use block (stop_reason "tool_use")."""
    return {"content": [{"type": "tool_use", "name": name, "input": input}]}


def text(content: str) -> dict[str, Any]:
    """A scripted turn with text only (stop_reason "end_turn")."""
    return {"content": [{"type": "text", "text": content}]}


def turn(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A turn with several blocks, e.g. ``turn(text("ok")["content"][0], ...)``."""
    return {"content": list(blocks)}


def _blocks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for block in reply["content"]:
        block = dict(block)
        if block["type"] == "tool_use":
            block.setdefault("id", f"toolu_{next(_ids):024d}")
        out.append(block)
    return out


def _stop_reason(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def message(reply: dict[str, Any], model: str, usage: dict[str, int]) -> dict[str, Any]:
    """The non-streaming response body for one turn."""
    blocks = _blocks(reply)
    return {
        "id": f"msg_{next(_ids):024d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _stop_reason(blocks),
        "stop_sequence": None,
        "usage": dict(usage),
    }


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(
    reply: dict[str, Any], model: str, usage: dict[str, int], chunk: int = 40
) -> list[bytes]:
    """The server-sent events of one streamed turn, in the order the real API sends them."""
    blocks = _blocks(reply)
    start_usage = {**usage, "output_tokens": 1}
    msg = {
        "id": f"msg_{next(_ids):024d}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage,
    }  # fmt: skip
    events = [
        _sse("message_start", {"type": "message_start", "message": msg}),
        _sse("ping", {"type": "ping"}),
    ]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            body = block["text"]
            deltas = [
                {"type": "text_delta", "text": body[j : j + chunk]}
                for j in range(0, len(body), chunk)
            ]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            body = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": body[j : j + chunk]}
                for j in range(0, len(body), chunk)
            ]
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
        )
        events += [
            _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            for d in deltas
        ]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    delta = {"stop_reason": _stop_reason(blocks), "stop_sequence": None}
    end_usage = {k: v for k, v in usage.items() if k != "input_tokens"}
    events.append(
        _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": end_usage})
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


class _Server(ThreadingHTTPServer):
    """A listen backlog for many concurrent clients (the default 5 refuses connections when
    dozens of episodes call at once on a loaded machine)."""

    request_queue_size = 256


class AnthropicServer:
    """``with AnthropicServer([...]) as srv: ANTHROPIC_BASE_URL=srv.base_url``.

    Args:
        script: turns played in order to agent-loop requests; once used up, ``default``
            (else an end_turn text) repeats.
        usage: the usage block of every reply (input/output/cache tokens).
        hang: never answer /v1/messages (the connection stays open until ``stop``).
        fail_after: once this many agent-loop turns are answered, every /v1/messages gets a
            500 ``api_error`` (an outage mid-episode).
    """

    def __init__(
        self,
        script: Iterable[dict[str, Any]],
        *,
        default: dict[str, Any] | None = None,
        usage: dict[str, int] | None = None,
        hang: bool = False,
        fail_after: int | None = None,
    ) -> None:
        self.script = list(script)
        self.fail_after = fail_after
        self.failures_sent = 0
        self.default = default or text("Done.")
        self.usage = usage or {
            "input_tokens": 120, "output_tokens": 30,
            "cache_creation_input_tokens": 10, "cache_read_input_tokens": 50,
        }  # fmt: skip
        self.hang = hang
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._pos = 0
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """What ANTHROPIC_BASE_URL takes: the origin, without ``/v1``."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def agent_requests(self) -> list[dict[str, Any]]:
        """The recorded requests that carried tools (the agent loop's turns)."""
        return [r for r in self.requests if r.get("tools")]

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return text("Scripted side reply.")
            if self._pos < len(self.script):
                self._pos += 1
                reply = self.script[self._pos - 1]
            else:
                reply = self.default
        return fill_cwd(reply, request_cwd(body))

    def start(self) -> AnthropicServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?", 1)[0].rstrip("/")
                outer.paths.append(self.path)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._json(
                        400,
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": "bad json"},
                        },
                    )
                    return
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": len(raw) // 4})
                    return
                if path != "/v1/messages":
                    self._json(
                        404,
                        {"type": "error", "error": {"type": "not_found_error", "message": path}},
                    )
                    return
                if outer.hang:
                    with outer._lock:
                        outer.requests.append(body)
                    outer._stopping.wait()
                    return
                if outer.fail_after is not None and outer._pos >= outer.fail_after:
                    with outer._lock:
                        outer.requests.append(body)
                        outer.failures_sent += 1
                    error = {"type": "api_error", "message": "scripted outage"}
                    self._json(500, {"type": "error", "error": error})
                    return
                reply = outer._next(body)
                model = str(body.get("model", "scripted"))
                if not body.get("stream"):
                    self._json(200, message(reply, model, outer.usage))
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event in stream_events(reply, model, outer.usage):
                    self.wfile.write(event)
                    self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:  # model listings and health probes: nothing here
                outer.paths.append(self.path)
                self._json(
                    404,
                    {"type": "error", "error": {"type": "not_found_error", "message": self.path}},
                )

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def _json(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, daemon=True, name="scripted-anthropic"
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> AnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
