"""The three APIs the gateway speaks: the closed set of routes, error shapes and usage.

A request is forwarded only when its path, as the client sent it (:func:`resolve` reads the
raw path: no percent-escapes, no dot segments, no empty segments), is one of a fixed set of
routes; paths are read with or without the ``/v1`` prefix (a client whose base URL lacks it
still works). The route forwarded is the canonical one, appended to the upstream's fixed API
root: nothing the client sends can choose another path on the upstream. Generation calls
(``chat``, ``responses``, ``messages``) are counted against the budget and captured as
turns; the auxiliary ones (token counting, model listings) are only forwarded and recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode

from pydantic import BaseModel

__all__ = [
    "Api",
    "Family",
    "Route",
    "Usage",
    "api_of",
    "error_body",
    "family_of",
    "is_aux",
    "resolve",
    "route",
]

Api = Literal["chat", "responses", "messages"]
Family = Literal["openai", "anthropic"]

GENERATION: dict[str, Api] = {
    "/chat/completions": "chat",
    "/responses": "responses",
    "/messages": "messages",
}
_AUX_POST = {"/messages/count_tokens"}
_MODEL_ID = re.compile(r"/models/[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}")
_SEGMENT = re.compile(r"[A-Za-z0-9_.:@+-]+")
#: query parameters forwarded (claude-code's ``?beta=true``); any other is dropped
QUERY_KEYS = frozenset({"beta", "api-version"})
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
}
_OPENAI_TYPES = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}


def route(path: str) -> str:
    """The API path without its ``/v1`` prefix (``/v1/messages`` -> ``/messages``)."""
    return path[3:] if path == "/v1" or path.startswith("/v1/") else path


@dataclass(frozen=True)
class Route:
    """A request the gateway forwards: its canonical path (after ``/v1``), with the allowed
    query parameters, and its generation API (None: auxiliary)."""

    path: str
    query: str
    api: Api | None

    @property
    def target(self) -> str:
        """What follows the upstream's API root."""
        return f"{self.path}?{self.query}" if self.query else self.path


def resolve(method: str, raw_path: str) -> Route | None:
    """The route of a request line's ``raw_path`` (undecoded, query included), or None when it
    is not one of the closed set (module docstring).

    >>> resolve("POST", "/v1/messages?beta=true")
    Route(path='/messages', query='beta=true', api='messages')
    >>> [resolve("GET", p) for p in ("/v1/models/../../x", "/v1/models/%2e%2e/x", "/v1/models/..%2fx")]
    [None, None, None]
    """
    path, _, query = raw_path.partition("?")
    if not path.startswith("/") or "%" in path or "\\" in path:
        return None
    segments = path[1:].split("/")
    if path.endswith("/"):
        segments.pop()  # one trailing slash is tolerated
    if not segments or any(s in ("", ".", "..") or not _SEGMENT.fullmatch(s) for s in segments):
        return None
    sub = route("/" + "/".join(segments))
    api = api_of(method, sub)
    if api is None and not is_aux(method, sub):
        return None
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k in QUERY_KEYS]
    return Route(sub, urlencode(pairs), api)


def api_of(method: str, path: str) -> Api | None:
    """The generation API a request calls, or None."""
    return GENERATION.get(route(path).rstrip("/")) if method == "POST" else None


def is_aux(method: str, path: str) -> bool:
    """A forwarded call that is not a generation (counting tokens, listing models)."""
    sub = route(path).rstrip("/")
    if method == "POST":
        return sub in _AUX_POST
    return method in ("GET", "HEAD") and (sub == "/models" or bool(_MODEL_ID.fullmatch(sub)))


def family_of(path: str) -> Family:
    """Whose error shape a path gets: Anthropic for ``/messages...``, OpenAI otherwise."""
    return "anthropic" if route(path).startswith("/messages") else "openai"


def error_body(family: Family, status: int, message: str, code: str | None = None) -> bytes:
    """An error in the API's own shape, so an SDK or CLI shows ``message`` as is.

    >>> error_body("anthropic", 400, "spent")
    b'{"type": "error", "error": {"type": "invalid_request_error", "message": "spent"}}'
    """
    if family == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    kind = _OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    err = {"message": message, "type": kind, "param": None, "code": code}
    return json.dumps({"error": err}).encode()


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class Usage(BaseModel):
    """Tokens of one call, the same four counts whatever the API (input excludes cache)."""

    input_tokens: int = 0  # uncached input
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reported: bool = False  # the upstream sent a usage block

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
            + self.output_tokens
        )

    @classmethod
    def of(cls, api: Api, usage: object) -> Usage:
        """Read ``usage`` as ``api`` writes it (prompt/completion or input/output names)."""
        if not isinstance(usage, dict):
            return cls()
        if api == "messages":
            return cls(
                input_tokens=_int(usage.get("input_tokens")),
                cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
                cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                reported=True,
            )
        if api == "chat":
            prompt, output = usage.get("prompt_tokens"), usage.get("completion_tokens")
            details = usage.get("prompt_tokens_details")
        else:
            prompt, output = usage.get("input_tokens"), usage.get("output_tokens")
            details = usage.get("input_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        return cls(
            input_tokens=max(0, _int(prompt) - cached),
            cache_read_tokens=cached,
            output_tokens=_int(output),
            reported=True,
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reported=self.reported or other.reported,
        )
