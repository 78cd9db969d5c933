"""What changes between the client's request and the upstream's, and between the replies.

Upstream-bound: only the client's headers of :data:`FORWARDED_HEADERS` (content type, the
APIs' version and beta flags: nothing that picks an organisation, a project or a billing
account beside the real key), plus the upstream's own headers and real key;
``Accept-Encoding: identity`` so the body can be read (and redacted) as it passes.
Client-bound: the upstream's headers minus hop-by-hop ones and those aiohttp writes itself,
values redacted. The body is rewritten only when the session changes something in it
(model name, the output limit a token budget caps, extra fields); otherwise the client's
bytes go up as they came.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from multidict import CIMultiDict

from cudaenv.faults import status_fault
from cudaenv.gateway.apis import Api, Family, Route
from cudaenv.gateway.capture import capped, decoded, summarise
from cudaenv.gateway.config import SessionConfig, Upstream
from cudaenv.gateway.redact import Redactor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from cudaenv.gateway.session import Grant, Session

__all__ = [
    "FORWARDED_HEADERS",
    "OUTPUT_LIMIT_FIELDS",
    "TOKEN_FIELDS",
    "Exchange",
    "client_headers",
    "output_limit",
    "record_exchange",
    "rewrite",
    "upstream_headers",
]

#: what ``token_fields`` adds to a chat-completions request (as the training-mode agent sends)
TOKEN_FIELDS: dict[str, Any] = {"logprobs": True, "return_token_ids": True}
_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
}  # fmt: skip
#: the client's request headers the upstream gets (an allow-list: nothing else passes)
FORWARDED_HEADERS = frozenset(
    {"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta"}
)
_DOWN_SKIP = _HOP | {"date", "server"}
#: where each API takes a reply's output limit, in order of preference
OUTPUT_LIMIT_FIELDS: dict[str, tuple[str, ...]] = {
    "chat": ("max_completion_tokens", "max_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}


def output_limit(api: Api, payload: dict[str, Any]) -> int | None:
    """The output limit a request asks for (None: it sets none)."""
    for key in OUTPUT_LIMIT_FIELDS[api]:
        value = payload.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def rewrite(
    api: Api, payload: dict[str, Any], config: SessionConfig, cap: int | None = None
) -> tuple[dict[str, Any], bool]:
    """The request body the upstream gets, and whether it differs from the client's;
    ``cap``: the output limit a token budget leaves this call (written into the field the
    client used, or the API's own when it set none)."""
    out = dict(payload)
    if cap is not None:
        fields = OUTPUT_LIMIT_FIELDS[api]
        used = [k for k in fields if isinstance(payload.get(k), int)]
        for key in used or fields[-1:]:
            out[key] = cap
    model = config.upstream_model(payload.get("model"))
    if model is not None:
        out["model"] = model
    if config.token_fields and api == "chat":
        out.update(TOKEN_FIELDS)
    if config.stream_usage and api == "chat" and payload.get("stream") is True:
        options = payload.get("stream_options")
        options = options if isinstance(options, dict) else {}
        if not options.get("include_usage"):
            out["stream_options"] = {**options, "include_usage": True}
    for key, value in config.extra_body.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out, out != payload


def upstream_headers(
    incoming: Mapping[str, str], family: Family, upstream: Upstream, key: str | None
) -> CIMultiDict[str]:
    """The headers of the forwarded request (module docstring)."""
    out: CIMultiDict[str] = CIMultiDict(
        (k, v) for k, v in incoming.items() if k.lower() in FORWARDED_HEADERS
    )
    out["Accept-Encoding"] = "identity"
    for name, value in upstream.headers.items():
        out[name] = value
    if key is not None:
        auth = upstream.auth
        if auth == "auto":
            auth = "x-api-key" if family == "anthropic" else "bearer"
        if auth == "bearer":
            out["Authorization"] = f"Bearer {key}"
        elif auth == "x-api-key":
            out["x-api-key"] = key
    return out


def client_headers(incoming: Mapping[str, str], redactor: Redactor) -> CIMultiDict[str]:
    """The reply's headers as the client gets them (module docstring)."""
    return CIMultiDict(
        (k, redactor.text(v)) for k, v in incoming.items() if k.lower() not in _DOWN_SKIP
    )


@dataclass
class Exchange:
    """One request's state while it is forwarded (what the capture needs afterwards)."""

    request: web.Request
    session: Session
    body: bytes  # as sent upstream
    start: float  # perf_counter at arrival
    target: Route
    status: int = 502
    encoding: str | None = None
    streamed: bool = False
    chunks: list[bytes] = field(default_factory=list)
    ttfb_s: float | None = None
    error: str | None = None
    fault: str | None = None  # a failure of the gateway or the upstream: "infrastructure"
    response: web.StreamResponse | None = None
    recorded: bool = False
    grant: Grant | None = None  # the budget's reservation, settled when it is recorded
    usage_expected: bool = True  # the reply must report usage (else its record has an error)

    def first_byte(self) -> None:
        if self.ttfb_s is None:
            self.ttfb_s = time.perf_counter() - self.start


def record_exchange(ex: Exchange, api: Api | None, fields: dict[str, Any]) -> None:
    """Capture the exchange into its session (once), settling its reservation."""
    ex.recorded = True
    session, cap = ex.session, ex.session.config.body_cap_bytes
    raw = b"".join(ex.chunks)
    plain = session.redactor.bytes(decoded(raw, ex.encoding))  # what is read is clean
    usage, turn, model, error, fault = None, None, None, ex.error, ex.fault
    if api is not None and ex.chunks:
        usage, turn, model, upstream_error, upstream_fault = summarise(
            api, ex.status, plain, ex.streamed, ex.usage_expected
        )
        error, fault = error or upstream_error, fault or upstream_fault
    elif api is None and ex.status >= 400 and fault is None:
        fault = status_fault(ex.status)
    request_text, request_cut = capped(ex.body, cap, session.redactor)
    response_text, response_cut = capped(plain, cap, session.redactor)
    fields = {**fields, "stream": ex.streamed or bool(fields.get("stream"))}
    session.record(
        **fields, grant=ex.grant, status=ex.status, fault=fault,
        latency_s=time.perf_counter() - ex.start, ttfb_s=ex.ttfb_s,
        usage=usage, turn=turn, response_model=model, error=error,
        request_body=request_text, request_bytes=len(ex.body), request_truncated=request_cut,
        response_body=response_text, response_bytes=len(raw), response_truncated=response_cut,
    )  # fmt: skip
