"""A scripted model server speaking the real OpenAI chat-completions HTTP API.

Tests point the real ``openai`` SDK at it: stdlib ``http.server`` on 127.0.0.1, an ephemeral
port, a background thread. It plays back a fixed script of replies (tool calls or text), one
per request, records every request body, and can be told to fail the first N requests with a
500, a 429 or a garbage body.

Like vLLM, it returns token data only when asked: ``"return_token_ids": true`` adds
``prompt_token_ids`` (on the response, or on the choice with ``prompt_ids_on="choice"`` as
SGLang does) and the choice's ``token_ids``; ``"logprobs": true`` adds
``logprobs.content[*]``. Its "tokenizer" is fake but deterministic: one prompt id per message
(a CRC of its JSON), one completion id per character of the reply. A scripted reply with
``reasoning`` carries it as ``message.reasoning_content``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count()


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted reply with one tool call (``raw_arguments`` overrides the JSON)."""
    raw = args.pop("raw_arguments", None)
    return {"tool_calls": [(name, raw if raw is not None else json.dumps(args))]}


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A scripted reply with several tool calls."""
    return {"tool_calls": [(name, json.dumps(args)) for name, args in calls]}


def text(content: str) -> dict[str, Any]:
    """A scripted reply with text only (finish_reason "stop")."""
    return {"content": content}


def with_reasoning(reply: dict[str, Any], reasoning: str) -> dict[str, Any]:
    """A scripted reply that also carries reasoning content."""
    return {**reply, "reasoning": reasoning}


def prompt_ids(messages: list[dict[str, Any]]) -> list[int]:
    """The fake tokenizer's prompt ids: one per message, so prefixes map to prefixes."""
    return [zlib.crc32(json.dumps(m, sort_keys=True).encode()) % 50_000 for m in messages]


def _completion_text(message: dict[str, Any]) -> str:
    calls = "".join(c["function"]["arguments"] for c in message.get("tool_calls", []))
    return (message.get("content") or "") + calls


def completion(
    reply: dict[str, Any],
    model: str,
    usage: tuple[int, int] = (100, 20),
    request: dict[str, Any] | None = None,
    prompt_ids_on: str = "response",
    ids: Iterator[int] = _ids,
) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{next(ids)}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for name, arguments in reply.get("tool_calls", [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    if reply.get("reasoning") is not None:
        message["reasoning_content"] = reply["reasoning"]
    body = _payload(message, model, usage, next(ids))
    request = request or {}
    choice = body["choices"][0]
    completion_text = _completion_text(message)
    if request.get("logprobs"):
        choice["logprobs"] = {
            "content": [
                {"token": ch, "logprob": -0.01 * (i + 1), "bytes": None, "top_logprobs": []}
                for i, ch in enumerate(completion_text)
            ]
        }
    if request.get("return_token_ids"):
        ids = prompt_ids(request.get("messages", []))
        (choice if prompt_ids_on == "choice" else body)["prompt_token_ids"] = ids
        choice["token_ids"] = [ord(ch) for ch in completion_text]
        choice["stop_reason"] = None
        body["kv_transfer_params"] = {"scripted": True}
    return body


def _payload(message: dict[str, Any], model: str, usage: tuple[int, int], n: int) -> dict[str, Any]:
    calls = message.get("tool_calls")
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


class _Server(ThreadingHTTPServer):
    """A listen backlog for many concurrent clients (the default 5 refuses connections when
    dozens of episodes call at once on a loaded machine)."""

    request_queue_size = 256


class ScriptedServer:
    """``with ScriptedServer([...]) as srv: OpenAI(base_url=srv.base_url)``.

    Args:
        script: replies played in order; once used up, ``default`` (else the last) repeats.
        fail_first: how many requests fail before the script starts.
        fail_from: every request from this one on (0-based) fails: the server breaks
            mid-episode.
        failure: "500", "429", "400", "401" or "garbage" (a 200 with a body that is not JSON).
        usage: (prompt_tokens, completion_tokens) reported per reply.
        prompt_ids_on: "response" (vLLM) or "choice" (SGLang): where ``prompt_token_ids`` go.
        responder: a function of the request body returning the reply; when given it answers
            every request instead of the script (replies that depend on the question asked).

    ``requests`` holds every request body received, ``responses`` every completion sent.
    """

    def __init__(
        self,
        script: Iterable[dict[str, Any]],
        *,
        fail_first: int = 0,
        fail_from: int | None = None,
        failure: str = "500",
        default: dict[str, Any] | None = None,
        usage: tuple[int, int] = (100, 20),
        prompt_ids_on: str = "response",
        responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.script = list(script)
        self.responder = responder
        self.prompt_ids_on = prompt_ids_on
        self.responses: list[dict[str, Any]] = []
        self._ids = itertools.count()  # per server: the same script gives the same ids
        self.fail_first = fail_first
        self.fail_from = fail_from
        self.failure = failure
        self.default = default
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self.failures_sent = 0
        self._lock = threading.Lock()
        self._pos = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict[str, Any]) -> tuple[int, bytes, str]:
        with self._lock:
            self.requests.append(body)
            late = self.fail_from is not None and len(self.requests) > self.fail_from
            if self.failures_sent < self.fail_first or late:
                self.failures_sent += 1
                if self.failure == "garbage":
                    return 200, b"{this is not json", "application/json"
                code = int(self.failure)
                err = {
                    "error": {"message": f"scripted {code}", "type": "server_error", "code": None}
                }
                return code, json.dumps(err).encode(), "application/json"
            if self.responder is not None:
                reply = self.responder(body)
            elif self._pos < len(self.script):
                reply = self.script[self._pos]
                self._pos += 1
            else:
                reply = self.default or (self.script[-1] if self.script else text("done"))
        payload = completion(
            reply,
            str(body.get("model", "scripted")),
            self.usage,
            body,
            self.prompt_ids_on,
            self._ids,
        )
        with self._lock:
            self.responses.append(payload)
        return 200, json.dumps(payload).encode(), "application/json"

    def start(self) -> ScriptedServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": {"message": "not found"}}', "application/json")
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "bad json"}}', "application/json")
                    return
                self._send(*outer._next(body))

            def _send(self, code: int, data: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                if code == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="scripted-openai"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
