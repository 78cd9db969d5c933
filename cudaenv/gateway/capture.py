"""One captured model call: what was asked, what came back, how long, how many tokens, cost.

Bodies are kept as redacted text up to the session's ``body_cap_bytes`` (``*_truncated``
says when more was cut; ``*_bytes`` is the whole size). A successful generation call also
carries its :class:`~cudaenv.env.trajectory.Turn` (token ids, logprobs, the raw message) and
its usage; a call the gateway refused or could not forward carries ``error`` and, for a
budget, ``refused`` (the truncation reason). A 200 whose body is not JSON, or that reports
no usage the session asked for, is recorded with an ``error`` too. ``fault`` says whose
failure a failed call was, by the rule of :mod:`cudaenv.faults`: the upstream's or the
gateway's ("infrastructure") or the client's ("agent": a route, a body the gateway refused).
``agent_turn`` marks a request that offered tools (the agent's loop, not a CLI's side call)
and ``tool_results`` the results it carried back for earlier calls of the session
(:mod:`cudaenv.gateway.steps`).
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any, Literal

from pydantic import BaseModel, Field

from cudaenv.env.trajectory import Turn
from cudaenv.faults import status_fault
from cudaenv.gateway.apis import Api, Usage
from cudaenv.gateway.config import Price
from cudaenv.gateway.redact import Redactor
from cudaenv.gateway.replies import final_body, turn_of
from cudaenv.gateway.steps import ToolResult

__all__ = ["CallRecord", "capped", "cost_usd", "decoded", "summarise"]


class CallRecord(BaseModel):
    """One request through the gateway (module docstring)."""

    index: int
    api: Api | None  # None: an auxiliary call (token counting, model listing)
    method: str
    path: str
    requested_model: str | None = None  # what the client asked for
    model: str | None = None  # what was sent upstream (after overrides)
    response_model: str | None = None  # what the upstream says it served
    stream: bool = False
    status: int = 0  # HTTP status the client got
    started_at: float = 0.0  # unix time
    latency_s: float = 0.0  # request received to last byte sent
    ttfb_s: float | None = None  # request received to the upstream's first body byte
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    request_body: str = ""
    request_bytes: int = 0
    request_truncated: bool = False
    response_body: str = ""
    response_bytes: int = 0
    response_truncated: bool = False
    turn: Turn | None = None
    error: str | None = None
    refused: str | None = None  # the truncation reason of a budget refusal
    fault: Literal["agent", "infrastructure"] | None = None  # a failed call: whose doing
    agent_turn: bool = False  # the request offered tools
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)


def capped(data: bytes, cap: int, redactor: Redactor) -> tuple[str, bool]:
    """``data`` as redacted text, cut at ``cap`` bytes (cut before redaction would let a
    half secret through, so the whole body is redacted first)."""
    clean = redactor.bytes(data)
    cut = len(clean) > cap
    return clean[:cap].decode("utf-8", errors="replace"), cut


def decoded(data: bytes, encoding: str | None) -> bytes:
    """The body under its content-encoding (gzip/deflate; anything else as is)."""
    try:
        if encoding == "gzip":
            return gzip.decompress(data)
        if encoding == "deflate":
            return zlib.decompress(data)
    except (OSError, EOFError, zlib.error):
        pass
    return data


def cost_usd(usage: Usage, price: Price | None) -> float | None:
    """What ``usage`` costs at ``price`` (None: no price for the model)."""
    if price is None:
        return None
    read = price.input_per_mtok if price.cache_read_per_mtok is None else price.cache_read_per_mtok
    write = (
        price.input_per_mtok if price.cache_write_per_mtok is None else price.cache_write_per_mtok
    )
    total = (
        usage.input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_read_tokens * read
        + usage.cache_write_tokens * write
    )
    return total / 1_000_000


def summarise(
    api: Api, status: int, raw: bytes, streamed: bool, usage_expected: bool = True
) -> tuple[Usage, Turn | None, str | None, str | None, str | None]:
    """(usage, turn, the upstream's model, error, fault) read from a reply's body."""
    body: dict[str, Any] | None = final_body(api, raw, streamed)
    if body is None:
        if status < 400:  # a model server that answers garbage has failed
            error = f"upstream answered {status} with a body that is not JSON"
            return Usage(), None, None, error, "infrastructure"
        return Usage(), None, None, f"upstream answered {status}", status_fault(status)
    usage = Usage.of(api, body.get("usage"))
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if status >= 400 or body.get("error"):
        fault = status_fault(status) if status >= 400 else "infrastructure"
        return usage, None, model, _error_text(status, body.get("error")), fault
    error = None
    if usage_expected and not usage.reported:  # neither the budget nor the cost can see it
        error = f"upstream answered {status} without usage"
    return usage, turn_of(api, body), model, error, None


def _error_text(status: int, err: Any) -> str:
    message = err.get("message") if isinstance(err, dict) else err
    return f"upstream answered {status}: {message}" if message else f"upstream answered {status}"
