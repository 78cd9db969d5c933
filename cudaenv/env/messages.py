"""What one step's calls produced, as an observation and as chat messages.

Kept apart from the env so the message shapes (one assistant message per model reply, one
``tool`` message per call) are stated once, next to the observation that labels each call.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from cudaenv.env.actions_text import Reply
from cudaenv.env.tools import ToolCall


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
