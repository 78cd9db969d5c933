"""Parsers for the event streams coding-agent CLIs print in headless mode.

Each parser reads JSON lines (one event a line; junk lines are skipped, so a stream cut off
by a kill still parses) into a :class:`ParsedRun`: the tool calls with their inputs and
results, the assistant's text, token usage and cost. The formats are the CLIs' own:

* ``claude-stream-json`` (``claude --print --output-format=stream-json --verbose``):
  ``system``/``init``, ``assistant`` events whose ``message.content`` holds text, thinking and
  ``tool_use`` blocks (one block per event in recent versions, the same message id repeated),
  ``user`` events with ``tool_result`` blocks, and a final ``result`` event with ``usage``,
  ``total_cost_usd``, ``num_turns`` and ``subtype`` (``success``, ``error_max_turns``, ...).
* ``opencode-json`` (``opencode run --format=json``): ``step_start``, ``text``, ``tool_use``
  (a finished tool part: ``tool``, ``callID``, ``state.input/output/status``), ``step_finish``
  (``tokens`` with input/output/reasoning/cache read+write, ``cost``), ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudaenv.env.text import clip

__all__ = ["PARSERS", "ParsedRun", "ParsedStep", "parse_claude_stream", "parse_opencode_json"]

MAX_OBSERVATION_CHARS = 20_000  # UTF-8 bytes kept of one tool result or text block


@dataclass
class ParsedStep:
    """One tool call (``tool`` set) or one piece of assistant text (``tool`` None)."""

    tool: str | None
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    observation: str = ""
    error: str | None = None


@dataclass
class ParsedRun:
    """What a CLI run did, as far as its event stream tells."""

    steps: list[ParsedStep] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    turns: int = 0
    finished: bool = False  # the CLI reported its end (claude's ``result`` event)
    stop_reason: str | None = None  # "max_turns" when the CLI stopped on its turn limit
    errors: list[str] = field(default_factory=list)
    events: int = 0

    @property
    def tool_calls(self) -> list[ParsedStep]:
        return [s for s in self.steps if s.tool is not None]


def _clip(text: str) -> str:
    """The env's observation clipping (head and tail) at this module's smaller limit."""
    return clip(text, MAX_OBSERVATION_CHARS)


def _events(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _result_text(content: Any) -> str:
    """A tool_result's content: a string, or a list of text (and image) blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(
                    str(block.get("text", ""))
                    if block.get("type") == "text"
                    else f"[{block.get('type')}]"
                )
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _claude_usage(usage: dict[str, Any]) -> dict[str, int]:
    out = {
        "input_tokens": _int(usage.get("input_tokens")),
        "output_tokens": _int(usage.get("output_tokens")),
        "cache_read_tokens": _int(usage.get("cache_read_input_tokens")),
        "cache_write_tokens": _int(usage.get("cache_creation_input_tokens")),
    }
    out["total_tokens"] = sum(out.values())
    return out


def parse_claude_stream(text: str) -> ParsedRun:
    """Parse claude-code's ``stream-json`` output (see the module docstring)."""
    run = ParsedRun()
    pending: dict[str, ParsedStep] = {}
    per_message: dict[str, dict[str, Any]] = {}  # usage repeats on every block of a message
    for event in _events(text):
        run.events += 1
        kind = event.get("type")
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        if kind == "assistant":
            if isinstance(message.get("usage"), dict):
                per_message[str(message.get("id") or len(per_message))] = message["usage"]
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    run.steps.append(
                        ParsedStep(tool=None, args={"text": _clip(str(block["text"]))})
                    )
                elif block.get("type") == "tool_use":
                    args = (
                        block.get("input")
                        if isinstance(block.get("input"), dict)
                        else {"input": block.get("input")}
                    )
                    step = ParsedStep(
                        tool=str(block.get("name")), args=args, call_id=block.get("id")
                    )
                    run.steps.append(step)
                    if step.call_id:
                        pending[step.call_id] = step
        elif kind == "user":
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                step = pending.pop(str(block.get("tool_use_id")), None)
                if step is None:
                    continue
                step.observation = _clip(_result_text(block.get("content")))
                if block.get("is_error"):
                    step.error = step.observation[:500] or "tool error"
        elif kind == "result":
            run.finished = True
            if isinstance(event.get("usage"), dict):
                run.usage = _claude_usage(event["usage"])
            if isinstance(event.get("total_cost_usd"), int | float):
                run.cost_usd = float(event["total_cost_usd"])
            run.turns = _int(event.get("num_turns"))
            subtype = str(event.get("subtype") or "")
            if subtype == "error_max_turns":
                run.stop_reason = "max_turns"
            if event.get("is_error") or subtype.startswith("error"):
                run.errors.append(
                    f"{subtype or 'error'}: {str(event.get('result') or '')[:500]}".rstrip(": ")
                )
    if not run.usage and per_message:  # cut off before the result event: add up what we saw
        totals: dict[str, int] = {}
        for usage in per_message.values():
            for k, v in _claude_usage(usage).items():
                totals[k] = totals.get(k, 0) + v
        run.usage = totals
    if not run.turns:
        run.turns = len(per_message)
    return run


def parse_opencode_json(text: str) -> ParsedRun:
    """Parse ``opencode run --format=json`` output (see the module docstring)."""
    run = ParsedRun()
    totals = {
        "input_tokens": 0,
        "output_tokens": 0,
        "reasoning_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    total_tokens = 0
    cost = 0.0
    saw_cost = False
    for event in _events(text):
        run.events += 1
        kind = event.get("type")
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if kind == "text" and part.get("text"):
            run.steps.append(ParsedStep(tool=None, args={"text": _clip(str(part["text"]))}))
        elif kind == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            args = state.get("input") if isinstance(state.get("input"), dict) else {}
            step = ParsedStep(tool=str(part.get("tool")), args=args, call_id=part.get("callID"))
            step.observation = _clip(str(state.get("output") or state.get("error") or ""))
            if state.get("status") == "error":
                step.error = str(state.get("error") or "tool error")[:500]
            run.steps.append(step)
        elif kind == "step_finish":
            run.turns += 1
            tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
            cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
            totals["input_tokens"] += _int(tokens.get("input"))
            totals["output_tokens"] += _int(tokens.get("output"))
            totals["reasoning_tokens"] += _int(tokens.get("reasoning"))
            totals["cache_read_tokens"] += _int(cache.get("read"))
            totals["cache_write_tokens"] += _int(cache.get("write"))
            total_tokens += _int(tokens.get("total")) or sum(
                _int(tokens.get(k)) for k in ("input", "output", "reasoning")
            ) + _int(cache.get("read")) + _int(cache.get("write"))
            if isinstance(part.get("cost"), int | float):
                cost += float(part["cost"])
                saw_cost = True
        elif kind == "error":
            err = event.get("error") if isinstance(event.get("error"), dict) else {}
            data = err.get("data") if isinstance(err.get("data"), dict) else {}
            run.errors.append(
                f"{err.get('name', 'error')}: {str(data.get('message') or err)[:500]}"
            )
    if run.turns:
        run.usage = {**totals, "total_tokens": total_tokens}
    run.cost_usd = cost if saw_cost else None
    return run


PARSERS: dict[str, Callable[[str], ParsedRun]] = {
    "claude-stream-json": parse_claude_stream,
    "opencode-json": parse_opencode_json,
}
