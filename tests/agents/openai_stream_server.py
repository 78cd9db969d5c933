"""The scripted OpenAI-compatible server, with streaming: what opencode talks to.

opencode's OpenAI-compatible provider always asks for ``"stream": true`` with
``stream_options.include_usage``, so a streamed request is answered with
``chat.completion.chunk`` server-sent events (a role chunk, text or tool-call deltas with the
arguments cut in pieces, a finish chunk, a usage chunk, ``data: [DONE]``); non-streamed ones
get :class:`ScriptedServer`'s plain completion. As in the Anthropic server, requests without
``tools`` (opencode's title generator) get a short text without using up the script, ``{cwd}``
in tool arguments becomes the working directory the prompt names, and ``hang=True`` never
answers. ``fail_first`` is not supported here (the base class's retry tests cover it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from tests.agents.anthropic_server import fill_cwd, request_cwd
from tests.agents.scripted_server import ScriptedServer, completion, text


def stream_body(
    reply: dict[str, Any], model: str, usage: tuple[int, int], chunk: int = 40
) -> bytes:
    """The whole SSE body of one streamed reply."""
    full = completion(reply, model, usage)
    message = full["choices"][0]["message"]
    base = {
        "id": full["id"],
        "object": "chat.completion.chunk",
        "created": full["created"],
        "model": model,
    }

    def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    events = [event({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    events += [event({"content": content[i : i + chunk]}) for i in range(0, len(content), chunk)]
    for n, call in enumerate(message.get("tool_calls", [])):
        fn = call["function"]
        head = {
            "index": n,
            "id": call["id"],
            "type": "function",
            "function": {"name": fn["name"], "arguments": ""},
        }
        events.append(event({"tool_calls": [head]}))
        args = fn["arguments"]
        events += [
            event({"tool_calls": [{"index": n, "function": {"arguments": args[i : i + chunk]}}]})
            for i in range(0, len(args), chunk)
        ]
    events.append(event({}, full["choices"][0]["finish_reason"]))
    events.append({**base, "choices": [], "usage": full["usage"]})
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


class StreamingScriptedServer(ScriptedServer):
    """:class:`ScriptedServer` plus streaming, side requests and ``{cwd}`` (module docstring)."""

    def __init__(
        self, script: Iterable[dict[str, Any]], *, hang: bool = False, **options: Any
    ) -> None:
        super().__init__(script, **options)
        self.hang = hang
        self._stopping = threading.Event()

    @property
    def agent_requests(self) -> list[dict[str, Any]]:
        """The recorded requests that carried tools (the agent loop's turns)."""
        return [r for r in self.requests if r.get("tools")]

    def _choose(self, body: dict[str, Any]) -> dict[str, Any]:
        """Record the request and pick its reply (side requests leave the script alone)."""
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return text("Scripted side reply")
            if self._pos < len(self.script):
                self._pos += 1
                return self.script[self._pos - 1]
            return self.default or (self.script[-1] if self.script else text("done"))

    def _next(self, body: dict[str, Any]) -> tuple[int, bytes, str]:
        if self.hang:
            with self._lock:
                self.requests.append(body)
            self._stopping.wait()
            return 503, b'{"error": {"message": "shutting down"}}', "application/json"
        reply = self._choose(body)
        cwd = request_cwd(body)
        reply = {
            **reply,
            "tool_calls": [(n, fill_cwd(a, cwd)) for n, a in reply.get("tool_calls", [])],
        }
        model = str(body.get("model", "scripted"))
        if not body.get("stream"):
            return (
                200,
                json.dumps(completion(reply, model, self.usage)).encode(),
                "application/json",
            )
        return 200, stream_body(reply, model, self.usage), "text/event-stream"

    def stop(self) -> None:
        self._stopping.set()
        super().stop()
