"""A deterministic upstream for gateway tests: the three APIs, streamed in awkward pieces.

:class:`ReplayServer` (stdlib ``http.server``, 127.0.0.1, an ephemeral port) answers
``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages`` and
``/v1/messages/count_tokens`` with one fixed reply text, as JSON or (``"stream": true``) as
the server-sent events each API sends. The same request always gets the same bytes (fixed
ids, fixed ``created``), so a reply fetched directly and one fetched through the gateway can
be compared byte for byte. Streams are written in pieces of ``PIECES`` bytes, flushed one by
one, so event boundaries, JSON and a secret fall across chunk boundaries.

Like vLLM, a chat request with ``"return_token_ids": true`` gets ``prompt_token_ids`` (on the
response, or its first chunk) and ``token_ids`` per choice (per chunk when streamed), and
``"logprobs": true`` gets ``logprobs.content``; a Responses request with ``include`` naming
``message.output_text.logprobs`` gets logprobs on its text. The "tokenizer" is one id per
character. ``echo_auth=True`` puts the credential the request carried into the reply (an
``echo`` field, or a first ``echo`` event) and an ``x-echo-auth`` header: a leaky upstream. ``hang=True`` never answers; ``cut=True``
closes a stream half way; ``gate`` (an Event) holds every reply until it is set; ``fixed``
replaces every POST reply with those bytes (a 200 that is not JSON, or has no usage);
``on_reply(n)`` runs after the n-th POST is answered. Every
request's headers and body are kept in ``requests`` (GETs too: ``/v1/models`` and
``/v1/models/<id>`` are answered, any other GET path gets a 404); ``max_in_flight`` is the
most POSTs it held at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PIECES = (1, 7, 64, 3, 250)
CREATED = 1_700_000_000


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _logprobs(text: str) -> list[dict[str, Any]]:
    return [
        {"token": ch, "logprob": -0.5 / (i + 1), "bytes": list(ch.encode()), "top_logprobs": []}
        for i, ch in enumerate(text)
    ]


def prompt_ids(body: dict[str, Any]) -> list[int]:
    """The fake prompt ids of a request: one per character of its JSON, capped at 32."""
    return [ord(c) for c in json.dumps(body.get("messages") or body.get("input"))[:32]]


def chat(body: dict[str, Any], text: str, usage: tuple[int, int]) -> bytes:
    model = body.get("model", "replay")
    if not body.get("stream"):
        choice: dict[str, Any] = {
            "index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": "stop", "logprobs": None,
        }  # fmt: skip
        reply: dict[str, Any] = {
            "id": "chatcmpl-replay", "object": "chat.completion", "created": CREATED,
            "model": model, "choices": [choice],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)},
        }  # fmt: skip
        if body.get("logprobs"):
            choice["logprobs"] = {"content": _logprobs(text)}
        if body.get("return_token_ids"):
            reply["prompt_token_ids"] = prompt_ids(body)
            choice["token_ids"] = [ord(c) for c in text]
        return json.dumps(reply).encode()
    base = {"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": CREATED}
    base["model"] = model
    events = []
    first: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                             "content": ""}, "finish_reason": None}]}  # fmt: skip
    if body.get("return_token_ids"):
        first["prompt_token_ids"] = prompt_ids(body)
    events.append(first)
    for i in range(0, len(text), 5):
        piece = text[i : i + 5]
        c: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        if body.get("logprobs"):
            c["logprobs"] = {"content": _logprobs(text)[i : i + 5]}
        if body.get("return_token_ids"):
            c["token_ids"] = [ord(ch) for ch in piece]
        events.append({**base, "choices": [c]})
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        usage_block = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        events.append({**base, "choices": [], "usage": {**usage_block, "total_tokens": sum(usage)}})
    return ("".join(_sse(e) for e in events) + "data: [DONE]\n\n").encode()


def responses(body: dict[str, Any], text: str, usage: tuple[int, int]) -> bytes:
    with_lp = "message.output_text.logprobs" in (body.get("include") or [])
    part = {"type": "output_text", "text": text, "annotations": []}
    if with_lp:
        part["logprobs"] = [{k: v for k, v in lp.items() if k != "bytes"} | {"bytes": []}
                            for lp in _logprobs(text)]  # fmt: skip
    item = {"id": "msg_replay", "type": "message", "status": "completed", "role": "assistant",
            "content": [part]}  # fmt: skip
    final = {
        "id": "resp_replay", "object": "response", "created_at": CREATED, "status": "completed",
        "model": body.get("model", "replay"), "output": [item], "error": None,
        "incomplete_details": None, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                  "total_tokens": sum(usage), "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip
    if not body.get("stream"):
        return json.dumps(final).encode()
    start = {**final, "status": "in_progress", "output": [], "usage": None}
    empty_item = {**item, "status": "in_progress", "content": []}
    seq = iter(range(1000))
    events = [
        ("response.created", {"type": "response.created", "response": start}),
        ("response.in_progress", {"type": "response.in_progress", "response": start}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "output_index": 0, "item": empty_item}),
        ("response.content_part.added", {"type": "response.content_part.added",
         "item_id": "msg_replay", "output_index": 0, "content_index": 0,
         "part": {"type": "output_text", "text": "", "annotations": []}}),
    ]  # fmt: skip
    for i in range(0, len(text), 5):
        delta = {"type": "response.output_text.delta", "item_id": "msg_replay",
                 "output_index": 0, "content_index": 0, "delta": text[i : i + 5], "logprobs": []}  # fmt: skip
        events.append(("response.output_text.delta", delta))
    events += [
        ("response.output_text.done", {"type": "response.output_text.done",
         "item_id": "msg_replay", "output_index": 0, "content_index": 0, "text": text,
         "logprobs": []}),
        ("response.content_part.done", {"type": "response.content_part.done",
         "item_id": "msg_replay", "output_index": 0, "content_index": 0, "part": part}),
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": final}),
    ]  # fmt: skip
    return "".join(_sse({**e, "sequence_number": next(seq)}, name) for name, e in events).encode()


def messages(body: dict[str, Any], text: str, usage: tuple[int, int]) -> bytes:
    u = {"input_tokens": usage[0], "output_tokens": usage[1],
         "cache_creation_input_tokens": 7, "cache_read_input_tokens": 11}  # fmt: skip
    msg = {"id": "msg_replay", "type": "message", "role": "assistant",
           "model": body.get("model", "replay"), "content": [{"type": "text", "text": text}],
           "stop_reason": "end_turn", "stop_sequence": None, "usage": u}  # fmt: skip
    if not body.get("stream"):
        return json.dumps(msg).encode()
    start = {**msg, "content": [], "stop_reason": None, "usage": {**u, "output_tokens": 1}}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
    ]  # fmt: skip
    for i in range(0, len(text), 5):
        delta = {"type": "text_delta", "text": text[i : i + 5]}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": delta}))  # fmt: skip
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
         "stop_sequence": None}, "usage": {"output_tokens": usage[1]}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return "".join(_sse(e, name) for name, e in events).encode()


ROUTES = {"/v1/chat/completions": chat, "/v1/responses": responses, "/v1/messages": messages}


class _Server(ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True


class ReplayServer:
    """``with ReplayServer() as up: Upstream(base_url=up.base_url)`` (module docstring)."""

    def __init__(
        self,
        text: str = "Hello from the replay upstream.",
        *,
        usage: tuple[int, int] = (120, 30),
        echo_auth: bool = False,
        hang: bool = False,
        cut: bool = False,
        gate: threading.Event | None = None,
        fixed: bytes | None = None,
        on_reply: Callable[[int], None] | None = None,
    ) -> None:
        self.text = text
        self.usage = usage
        self.echo_auth = echo_auth
        self.hang = hang
        self.cut = cut
        self.gate = gate
        self.fixed = fixed
        self.on_reply = on_reply  # called with the number of POSTs answered so far
        self.answered = 0
        self.in_flight = self.max_in_flight = 0
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def origin(self) -> str:
        return self.base_url.removesuffix("/v1")

    def reply(self, path: str, body: dict[str, Any], auth: str = "") -> tuple[bytes, str]:
        """(body bytes, content type) of the reply to ``body`` on ``path``."""
        if path == "/v1/messages/count_tokens":
            return json.dumps({"input_tokens": 42}).encode(), "application/json"
        data = ROUTES[path](body, self.text, self.usage)
        if not body.get("stream"):
            if self.echo_auth:
                data = json.dumps({**json.loads(data), "echo": auth}).encode()
            return data, "application/json"
        if self.echo_auth:
            data = _sse({"echo": auth}, "echo").encode() + data
        return data, "text/event-stream"

    def start(self) -> ReplayServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer._lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers),
                                           "body": None, "raw": b""})  # fmt: skip
                path = self.path.split("?", 1)[0]
                if path == "/v1/models":
                    self._send(200, b'{"object": "list", "data": []}', "application/json")
                elif path.startswith("/v1/models/") and path.count("/") == 3:
                    model = {"id": path.rsplit("/", 1)[1], "object": "model"}
                    self._send(200, json.dumps(model).encode(), "application/json")
                else:
                    self._send(404, b'{"error": {"message": "no route"}}', "application/json")

            def do_POST(self) -> None:
                with outer._lock:
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self._post()
                finally:
                    with outer._lock:
                        outer.in_flight -= 1
                        outer.answered += 1
                        answered = outer.answered
                    if outer.on_reply is not None:
                        outer.on_reply(answered)

            def _post(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?", 1)[0]
                body = json.loads(raw or b"{}")
                with outer._lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers),
                                           "body": body, "raw": raw})  # fmt: skip
                if outer.gate is not None:
                    outer.gate.wait()
                if outer.fixed is not None:
                    self._send(200, outer.fixed, "application/json")
                    return
                if path not in ROUTES and path != "/v1/messages/count_tokens":
                    self._send(404, b'{"error": {"message": "no route"}}', "application/json")
                    return
                if outer.hang:
                    outer._stopping.wait()
                    return
                auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
                data, ctype = outer.reply(path, body, auth)
                if ctype != "text/event-stream":
                    self._send(200, data, ctype, auth)
                    return
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self._echo(auth)
                self.end_headers()
                pos, n = 0, 0
                end = len(data) // 2 if outer.cut else len(data)
                while pos < end:
                    piece = data[pos : pos + PIECES[n % len(PIECES)]]
                    pos, n = pos + len(piece), n + 1
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if outer.cut:
                    self.close_connection = True
                    return  # no terminating chunk: a broken stream
                self.wfile.write(b"0\r\n\r\n")

            def _echo(self, auth: str) -> None:
                if outer.echo_auth:
                    self.send_header("x-echo-auth", auth)

            def _send(self, code: int, data: bytes, ctype: str, auth: str = "") -> None:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self._echo(auth)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="replay").start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self.gate is not None:
            self.gate.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
