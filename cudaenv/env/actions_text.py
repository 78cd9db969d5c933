"""One model reply as tool calls: Hermes ``<tool_call>`` text, bare JSON, OpenAI tool calls.

SkyRL and OpenRLHF hand an environment the raw decoded text of a completion; OpenAI-style
clients hand it a message with ``tool_calls``. :func:`parse_reply` turns any of these into
the ordered calls to run plus the assistant message exactly as the model produced it, so
every adapter shares one parser. A call that cannot be parsed is a :class:`ParsedCall` with
an ``error`` naming the problem (the env shows it as an observation); nothing here raises
for bad model output.

Accepted replies:

- text with one or several ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  blocks (an unclosed last block runs to the end of the text);
- text holding bare JSON objects ``{"name": .., "arguments": ..}`` or ``{"tool": .., "args": ..}``
  (the whole text, or objects inside prose, in order);
- the structured forms of :func:`cudaenv.env.tools.parse_action` (a dict, its JSON string,
  an OpenAI ``tool_call`` dict or SDK object), a list of them (one message's ``tool_calls``),
  or an assistant message (dict or SDK object) with ``content`` and/or ``tool_calls``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces

from cudaenv.env.tools import MAX_ACTION_CHARS, TOOL_ARGS, ToolCall, parse_action
from cudaenv.errors import ToolError

__all__ = [
    "MAX_CALLS_PER_REPLY",
    "ActionSpace",
    "ParsedCall",
    "Reply",
    "no_call_help",
    "parse_reply",
    "parse_text",
]

#: calls beyond this many in one reply are not run (each gets an error observation)
MAX_CALLS_PER_REPLY = 32
_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.S)
_BARE = re.compile(r'\{\s*"(?:name|tool)"\s*:')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ParsedCall:
    """One call of a reply: ``call`` when it parsed, else ``error`` saying why not."""

    call: ToolCall | None
    error: str | None = None
    raw: Any = None


@dataclass
class Reply:
    """A parsed model reply.

    ``message`` is the assistant message to record (text replies keep their text as
    ``content``; structured ones keep their ``tool_calls``, with an ``id`` filled in where the
    model gave none). ``kind`` is "text", "calls" or "invalid" (no call could be found).
    """

    calls: list[ParsedCall]
    message: dict[str, Any]
    kind: str = "calls"


def no_call_help() -> str:
    """The observation for a reply without a tool call: the expected format and the tools."""
    return (
        "error: no tool call found in your reply. Call a tool with a block like "
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call> '
        '(or a JSON object {"name": ..., "arguments": {...}}); several blocks run in order. '
        f"Tools: {', '.join(TOOL_ARGS)}. Call submit when the solution is ready."
    )


def _call(obj: Any, label: str) -> ParsedCall:
    try:
        return ParsedCall(call=parse_action(obj), raw=obj)
    except ToolError as exc:
        return ParsedCall(call=None, error=f"{label}: {exc}" if label else str(exc), raw=obj)


def _json_call(text: str, label: str, *, unclosed: bool = False) -> ParsedCall:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (the <tool_call> block is not closed)" if unclosed else ""
        return ParsedCall(
            call=None,
            error=f"{label}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{hint}",
            raw=text,
        )
    if not isinstance(obj, dict):
        return ParsedCall(call=None, error=f"{label}: expected a JSON object", raw=text)
    return _call(obj, label)


def parse_text(text: str) -> list[ParsedCall]:
    """The calls in assistant text, in order; an empty list when it holds none."""
    if "<tool_call>" in text:
        blocks = list(_BLOCK.finditer(text))
        return [
            _json_call(m.group(1).strip(), f"tool call {i}", unclosed=not m.group(2))
            for i, m in enumerate(blocks, start=1)
        ]
    stripped = text.strip()
    if stripped[:1] in ("{", "["):  # the whole reply is meant as JSON
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            return [ParsedCall(call=None, error=f"action is not valid JSON: {exc}", raw=text)]
        items = obj if isinstance(obj, list) else [obj]
        return [_call(o, f"tool call {i}") for i, o in enumerate(items, start=1)]
    calls: list[ParsedCall] = []
    pos = 0
    while (m := _BARE.search(text, pos)) is not None:
        try:
            obj, end = _DECODER.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            label = f"tool call {len(calls) + 1}"
            calls.append(ParsedCall(call=None, error=f"{label}: not valid JSON: {exc.msg}"))
            break
        calls.append(_call(obj, f"tool call {len(calls) + 1}"))
        pos = end
    return calls


def _tool_call_dict(obj: Any) -> dict[str, Any]:
    """A tool call as the JSON-safe dict the model sent (SDK objects dumped)."""
    if isinstance(obj, dict):
        return json.loads(json.dumps(obj, default=str))
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json", exclude_none=True))
    fn = obj.function
    return {
        "id": getattr(obj, "id", None),
        "type": "function",
        "function": {"name": fn.name, "arguments": fn.arguments},
    }


def _structured(items: list[Any], content: Any, base: dict[str, Any]) -> Reply:
    many = len(items) > 1
    calls = [_call(o, f"tool call {i}" if many else "") for i, o in enumerate(items, start=1)]
    tool_calls = []
    for parsed, raw in zip(calls, items, strict=True):
        if isinstance(raw, dict) and ("tool" in raw or "args" in raw) and parsed.call:
            c = parsed.call  # the env's own {"tool", "args"} form: as an OpenAI tool call
            tool_calls.append(
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.tool, "arguments": c.arguments_json()},
                }
            )
        else:
            tool_calls.append(_tool_call_dict(raw) if _is_call_like(raw) else raw)
    message = {**base, "role": "assistant", "content": content, "tool_calls": tool_calls}
    return Reply(calls=calls, message=message, kind="calls")


def _is_call_like(obj: Any) -> bool:
    return isinstance(obj, dict) or hasattr(obj, "function")


def _text_reply(text: str) -> Reply:
    calls = parse_text(text)
    return Reply(
        calls=calls,
        message={"role": "assistant", "content": text},
        kind="text" if calls else "invalid",
    )


def parse_reply(action: Any) -> Reply:
    """Parse one model reply (see the module docstring); never raises for bad input."""
    if isinstance(action, bytes):
        action = action.decode("utf-8", errors="replace")
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS:
            err = _call(action, "")  # the size error, with the limit
            return Reply(calls=[err], message={"role": "assistant", "content": ""}, kind="invalid")
        if "<tool_call>" not in action and action.strip()[:1] == "{":
            try:
                obj = json.loads(action)
            except json.JSONDecodeError:
                return _text_reply(action)
            if isinstance(obj, dict):
                return parse_reply(obj)  # the env's JSON action form: structured
        return _text_reply(action)
    if isinstance(action, list | tuple):
        return _structured(list(action), None, {})
    message: dict[str, Any] | None = None
    if isinstance(action, dict) and action.get("role") == "assistant":
        message = json.loads(json.dumps(action, default=str))
    elif not isinstance(action, dict) and hasattr(action, "tool_calls"):  # SDK message
        dump = getattr(action, "model_dump", None)
        message = dict(dump(mode="json", exclude_none=True)) if callable(dump) else None
        if message is None:
            message = {"role": "assistant", "content": getattr(action, "content", None)}
        message["role"] = "assistant"
        items = list(getattr(action, "tool_calls", None) or [])
        if items:
            return _structured(items, message.get("content"), message)
        return _text_reply(str(message.get("content") or ""))
    if message is not None:
        items = list(message.get("tool_calls") or [])
        if items:
            return _structured(items, message.get("content"), message)
        text = str(message.get("content") or "")
        reply = _text_reply(text)
        reply.message = message
        return reply
    if _is_call_like(action):
        return _structured([action], None, {})
    err = _call(action, "")
    content = json.dumps(action, default=str)
    return Reply(calls=[err], message={"role": "assistant", "content": content}, kind="invalid")


class ActionSpace(spaces.Text):
    """The env's action space: model text over the charset (what ``sample()`` draws), and
    every structured form :func:`parse_reply` runs: ``contains`` is True for a tool call
    dict, its JSON, an OpenAI tool call or message whose calls all parse, so
    ``env.action_space.contains({"tool": "submit", "args": {}})`` holds."""

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return super().contains(x)
        reply = parse_reply(x)
        return reply.kind == "calls" and all(c.call is not None for c in reply.calls)
