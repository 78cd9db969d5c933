"""A reply as one JSON body, whether it came whole or as server-sent events, and its turn.

The client gets the upstream's bytes untouched; this module reads a copy afterwards to learn
what was said: the chat-completion chunks are folded into one ``chat.completion`` (content,
reasoning, tool calls, logprobs and vLLM's ``token_ids`` concatenated), the Anthropic events
into one ``message``, and a Responses stream gives its final ``response`` object. The
:class:`~cudaenv.env.trajectory.Turn` of a chat completion is built exactly as the
training-mode ``OpenAIAgent`` builds it (:func:`cudaenv.agents.turns.turn_from_response`);
an Anthropic turn's ``message`` is ``{"role": "assistant", "content": [blocks]}``, a Responses
turn's is ``{"role": "assistant", "output": [items]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from cudaenv.agents.turns import REASONING_KEYS, turn_from_response
from cudaenv.env.trajectory import Turn
from cudaenv.gateway.apis import Api

__all__ = ["final_body", "sse_events", "turn_of"]

_MESSAGE_KEYS = {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
_RESPONSE_KEYS = {
    "id", "object", "created_at", "status", "model", "output", "usage", "error",
    "incomplete_details", "instructions", "max_output_tokens", "max_tool_calls",
    "parallel_tool_calls", "previous_response_id", "reasoning", "store", "temperature", "text",
    "tool_choice", "tools", "top_p", "top_logprobs", "truncation", "user", "metadata",
    "background", "service_tier", "prompt", "prompt_cache_key", "safety_identifier",
    "conversation", "output_text", "billing", "prompt_token_ids", "token_ids",
}  # fmt: skip
_CHOICE_STREAM_KEYS = {"index", "delta", "logprobs", "finish_reason", "token_ids"}


def sse_events(raw: bytes) -> Iterator[tuple[str, str]]:
    """``(event, data)`` of each server-sent event (``event`` is "" when not named)."""
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for block in text.split("\n\n"):
        name, data = "", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            yield name, "\n".join(data)


def _json_events(raw: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, data in sse_events(raw):
        try:
            value = json.loads(data)
        except ValueError:
            continue  # "[DONE]", keep-alives
        if isinstance(value, dict):
            yield name, value


def _chat(raw: bytes) -> dict[str, Any]:
    body: dict[str, Any] = {}
    choice: dict[str, Any] = {"index": 0}
    parts: dict[str, list[str]] = {"content": [], **{k: [] for k in REASONING_KEYS}}
    calls: dict[int, dict[str, Any]] = {}
    logprobs: list[dict[str, Any]] = []
    token_ids: list[int] | None = None
    for _, chunk in _json_events(raw):
        for key, value in chunk.items():
            if key not in ("choices", "object") and value is not None:
                body[key] = value if key in ("usage",) else body.get(key, value)
        for c in chunk.get("choices") or []:
            if c.get("index", 0) != 0:
                continue
            delta = c.get("delta") or {}
            for key, acc in parts.items():
                if isinstance(delta.get(key), str):
                    acc.append(delta[key])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    int(call.get("index", 0)), {"type": "function", "function": {}}
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                fn = call.get("function") or {}
                if fn.get("name"):
                    slot["function"]["name"] = fn["name"]
                args = fn.get("arguments")
                if isinstance(args, str):
                    slot["function"]["arguments"] = slot["function"].get("arguments", "") + args
            logprobs += (c.get("logprobs") or {}).get("content") or []
            if isinstance(c.get("token_ids"), list):
                token_ids = (token_ids or []) + c["token_ids"]
            for key, value in c.items():
                if key not in _CHOICE_STREAM_KEYS and value is not None:
                    choice[key] = value
            if c.get("finish_reason"):
                choice["finish_reason"] = c["finish_reason"]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(parts["content"]) or None}
    message.update({k: "".join(parts[k]) for k in REASONING_KEYS if parts[k]})
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    choice["message"] = message
    choice.setdefault("finish_reason", None)
    if logprobs:
        choice["logprobs"] = {"content": logprobs}
    if token_ids is not None:
        choice["token_ids"] = token_ids
    return {**body, "object": "chat.completion", "choices": [choice]}


def _messages(raw: bytes) -> dict[str, Any]:
    body: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for _, event in _json_events(raw):
        kind = event.get("type")
        if kind == "message_start":
            body = dict(event.get("message") or {})
        elif kind == "content_block_start":
            blocks[int(event.get("index", 0))] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            i, delta = int(event.get("index", 0)), event.get("delta") or {}
            block = blocks.setdefault(i, {})
            for key in ("text", "thinking", "signature"):
                if isinstance(delta.get(key), str):
                    block[key] = block.get(key, "") + delta[key]
            if isinstance(delta.get("partial_json"), str):
                partial.setdefault(i, []).append(delta["partial_json"])
        elif kind == "message_delta":
            body.update({k: v for k, v in (event.get("delta") or {}).items()})
            body["usage"] = {**(body.get("usage") or {}), **(event.get("usage") or {})}
        elif kind == "error":
            body["error"] = event.get("error")
    for i, pieces in partial.items():
        try:
            blocks[i]["input"] = json.loads("".join(pieces) or "{}")
        except ValueError:
            blocks[i]["input"] = "".join(pieces)
    body["content"] = [blocks[i] for i in sorted(blocks)]
    return body


def _responses(raw: bytes) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for _, event in _json_events(raw):
        if isinstance(event.get("response"), dict):
            final = event["response"]  # created, in_progress ... completed: the last wins
    return final


def final_body(api: Api, raw: bytes, streamed: bool) -> dict[str, Any] | None:
    """The reply as one JSON object (None: not JSON, e.g. an HTML error page)."""
    if streamed:
        return {"chat": _chat, "messages": _messages, "responses": _responses}[api](raw)
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _ints(value: Any) -> list[int] | None:
    return [int(v) for v in value] if isinstance(value, list) else None


def _responses_logprobs(output: list[Any]) -> list[float] | None:
    found = [
        float(lp["logprob"])
        for item in output
        if isinstance(item, dict)
        for part in item.get("content") or []
        if isinstance(part, dict)
        for lp in part.get("logprobs") or []
        if isinstance(lp, dict) and "logprob" in lp
    ]
    return found or None


def turn_of(api: Api, body: dict[str, Any]) -> Turn:
    """The :class:`Turn` of one successful reply (module docstring for each API's message)."""
    if api == "chat":
        return turn_from_response(body)
    if api == "messages":
        known, message = _MESSAGE_KEYS, {"role": "assistant", "content": body.get("content")}
        finish = body.get("stop_reason")
        logprobs = None
    else:
        output = body.get("output") if isinstance(body.get("output"), list) else []
        known, message = _RESPONSE_KEYS, {"role": "assistant", "output": output}
        finish, logprobs = body.get("status"), _responses_logprobs(output)
    return Turn(
        prompt_token_ids=_ints(body.get("prompt_token_ids")),
        completion_token_ids=_ints(body.get("token_ids")),
        completion_logprobs=logprobs,
        message=message,
        finish_reason=finish,
        extra={k: v for k, v in body.items() if k not in known and v is not None},
    )
