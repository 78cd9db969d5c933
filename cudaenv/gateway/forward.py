"""What changes between the client's request and the upstream's, and between the replies.

Upstream-bound: the client's headers minus hop-by-hop ones and its credentials (the session
token), plus the upstream's own headers and real key; ``Accept-Encoding: identity`` so the
body can be read (and redacted) as it passes. Client-bound: the upstream's headers minus
hop-by-hop ones and those aiohttp writes itself, values redacted. The body is rewritten only
when the session changes something in it (model name, extra fields); otherwise the client's
bytes go up as they came.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from multidict import CIMultiDict

from cudaenv.gateway.apis import Api, Family, route
from cudaenv.gateway.config import SessionConfig, Upstream
from cudaenv.gateway.redact import Redactor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from cudaenv.gateway.session import Session

__all__ = ["TOKEN_FIELDS", "Exchange", "client_headers", "rewrite", "upstream_headers"]

#: what ``token_fields`` adds to a chat-completions request (as the training-mode agent sends)
TOKEN_FIELDS: dict[str, Any] = {"logprobs": True, "return_token_ids": True}
_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
}  # fmt: skip
_CREDENTIALS = {"authorization", "x-api-key", "api-key"}
_UP_SKIP = _HOP | _CREDENTIALS | {"accept-encoding"}
_DOWN_SKIP = _HOP | {"date", "server"}


def rewrite(
    api: Api, payload: dict[str, Any], config: SessionConfig
) -> tuple[dict[str, Any], bool]:
    """The request body the upstream gets, and whether it differs from the client's."""
    out = dict(payload)
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
        (k, v) for k, v in incoming.items() if k.lower() not in _UP_SKIP
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
    status: int = 502
    encoding: str | None = None
    streamed: bool = False
    chunks: list[bytes] = field(default_factory=list)
    ttfb_s: float | None = None
    error: str | None = None
    response: web.StreamResponse | None = None
    recorded: bool = False

    @property
    def route(self) -> str:
        """The path after ``/v1`` (or the whole path), with the query string."""
        sub = route(self.request.path)
        query = self.request.query_string
        return f"{sub}?{query}" if query else sub

    def first_byte(self) -> None:
        if self.ttfb_s is None:
            self.ttfb_s = time.perf_counter() - self.start
