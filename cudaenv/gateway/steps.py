"""A CLI episode's steps, read from the model calls the gateway captured (host side only).

Why: a CLI's own event log lives in the sandbox, where the commands it runs can rewrite it
(steps removed, a forged cost). The gateway sees what matters from outside: every reply the
model gave (its text and its tool calls, in :class:`~cudaenv.env.trajectory.Turn` messages)
and every request the CLI sent next, which carries each tool call's result back to the
model. So a step is a tool call the model made, with the result the CLI reported for it
(found in a later request by its call id), or a piece of the model's text. Only the agent's
own turns count: requests that offer tools (a CLI's side calls, titles and topic checks,
offer none). A tool call whose result never reached the model (the CLI stopped first) keeps
:data:`NO_RESULT` as its observation.

Per API: Anthropic ``tool_use`` / ``tool_result`` blocks, chat-completions ``tool_calls`` /
``role: tool`` messages, Responses ``function_call`` / ``function_call_output`` items.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from cudaenv.env.external import ExternalStep
from cudaenv.env.text import clip
from cudaenv.gateway.apis import Api

__all__ = ["MAX_OBSERVATION_CHARS", "NO_RESULT", "ToolResult", "tool_results", "turn_steps"]

MAX_OBSERVATION_CHARS = 20_000
NO_RESULT = "[no result seen: the CLI sent no further model request after this call]"


class ToolResult(BaseModel):
    """What the CLI told the model one tool call returned."""

    text: str
    error: bool = False


def _text(content: Any) -> str:
    """A result's content: a string, or a list of text (and other) parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                parts.append(str(text) if text is not None else f"[{part.get('type')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def _results(api: Api, payload: dict[str, Any]) -> Iterator[tuple[str, Any, bool]]:
    """``(call id, content, is_error)`` of every tool result in a request, newest first."""
    if api == "responses":
        items = payload.get("input")
        for item in reversed(items if isinstance(items, list) else []):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                yield str(item.get("call_id")), item.get("output"), False
        return
    messages = payload.get("messages")
    for msg in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(msg, dict):
            continue
        if api == "chat" and msg.get("role") == "tool":
            yield str(msg.get("tool_call_id")), msg.get("content"), False
        elif api == "messages" and isinstance(msg.get("content"), list):
            for block in reversed(msg["content"]):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    error = bool(block.get("is_error"))
                    yield str(block.get("tool_use_id")), block.get("content"), error


def tool_results(api: Api, payload: dict[str, Any], wanted: Iterable[str]) -> dict[str, ToolResult]:
    """The results a request carries for the ``wanted`` call ids (the session's open calls)."""
    want = set(wanted)
    found: dict[str, ToolResult] = {}
    if not want:
        return found
    for call_id, content, error in _results(api, payload):
        if call_id in want and call_id not in found:
            found[call_id] = ToolResult(
                text=clip(_text(content), MAX_OBSERVATION_CHARS), error=error
            )
            if len(found) == len(want):
                break
    return found


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw or "{}")
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {} if raw is None else {"input": raw}


def _text_step(text: Any) -> ExternalStep | None:
    return (
        ExternalStep(tool=None, args={"text": clip(str(text), MAX_OBSERVATION_CHARS)})
        if text
        else None
    )


def turn_steps(api: Api, message: dict[str, Any]) -> list[ExternalStep]:
    """A reply's text pieces and tool calls, in order, as steps without their results."""
    out: list[ExternalStep | None] = []
    if api == "messages":
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                out.append(_text_step(block.get("text")))
            elif block.get("type") == "tool_use":
                out.append(ExternalStep(tool=str(block.get("name")), args=_args(block.get("input")),
                                        call_id=str(block.get("id"))))  # fmt: skip
    elif api == "chat":
        out.append(_text_step(message.get("content")))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                out.append(ExternalStep(tool=str(fn.get("name")), args=_args(fn.get("arguments")),
                                        call_id=str(call.get("id"))))  # fmt: skip
    else:
        for item in message.get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                out += [_text_step(p.get("text")) for p in item.get("content") or []
                        if isinstance(p, dict)]  # fmt: skip
            elif item.get("type") == "function_call":
                out.append(ExternalStep(tool=str(item.get("name")), args=_args(item.get("arguments")),
                                        call_id=str(item.get("call_id"))))  # fmt: skip
    return [s for s in out if s is not None]


def call_ids(api: Api, message: dict[str, Any]) -> list[str]:
    """The ids of a reply's tool calls (those whose results the session waits for)."""
    return [s.call_id for s in turn_steps(api, message) if s.tool is not None and s.call_id]
