"""What one step's calls produced, as an observation and as chat messages.

Kept apart from the env so the message shapes (one assistant message per model reply, one
``tool`` message per call) are stated once, next to the observation that labels each call.
"""

from __future__ import annotations

import copy
import json
from typing import Any, NamedTuple

from cudaenv.env.actions_text import Reply
from cudaenv.env.tools import ToolCall
from cudaenv.env.trajectory import StepRecord


class Outcome(NamedTuple):
    """One call of a reply after it ran (or was refused)."""

    call: ToolCall | None
    call_id: str
    observation: str
    error: str | None
    seconds: float


def join_observations(outs: list[Outcome]) -> str:
    """Several calls' outputs as one observation, each labelled with its number and tool."""
    n = len(outs)
    return "\n\n".join(
        f"[tool call {k} of {n}: {o.call.tool if o.call else 'unparsed'}]\n{o.observation}"
        for k, o in enumerate(outs, start=1)
    )


def reply_messages(reply: Reply, outs: list[Outcome]) -> list[dict[str, Any]]:
    """The assistant message as the model produced it, then one message per call.

    A reply without any call is answered by a ``user`` message (there is no call to answer);
    a tool call without an id gets the env's id, so each ``tool`` message names its call.
    """
    message = copy.deepcopy(reply.message)
    if reply.kind == "invalid":
        return [message, {"role": "user", "content": outs[0].observation}]
    for tc, out in zip(message.get("tool_calls") or [], outs, strict=False):
        if isinstance(tc, dict) and not tc.get("id"):
            tc["id"] = out.call_id
    out_msgs = [message]
    for o in outs:
        msg: dict[str, Any] = {"role": "tool", "tool_call_id": o.call_id, "content": o.observation}
        if reply.kind == "text" and o.call is not None:
            msg["name"] = o.call.tool
        out_msgs.append(msg)
    return out_msgs


def external_messages(record: StepRecord) -> list[dict[str, Any]]:
    """A step a driver ran itself as the messages of one reply: assistant text for a text
    step; else an assistant message with its one tool call, then that call's ``tool`` message."""
    if record.tool is None:
        return [{"role": "assistant", "content": str(record.args.get("text", ""))}]
    call = {
        "id": record.call_id,
        "type": "function",
        "function": {"name": record.tool, "arguments": json.dumps(record.args, ensure_ascii=False)},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": record.call_id, "content": record.observation},
    ]


def step_records(outs: list[Outcome], first: int, reward: float, tokens: int) -> list[StepRecord]:
    """One trajectory record per call of a reply, numbered from ``first``; the reply's reward
    and observation tokens go on its last call's record."""
    last = len(outs) - 1
    return [
        StepRecord(
            index=first + k,
            tool=o.call.tool if o.call else None,
            args=o.call.args if o.call else {},
            call_id=o.call_id,
            observation=o.observation,
            reward=reward if k == last else 0.0,
            error=o.error,
            duration_s=round(o.seconds, 6),
            tokens=tokens if k == last else 0,
        )
        for k, o in enumerate(outs)
    ]
