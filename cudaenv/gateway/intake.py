"""Reading a request before it is forwarded: its session token, its body within the
session's limit as it arrives, its JSON (off the event loop when large).

Why here: a body is read chunk by chunk and refused as soon as it passes the limit (a
sandbox's 60 MB bodies must not grow the trainer's process by gigabytes), and parsing or
re-encoding a large one runs in a thread (a 30 MB JSON parse on the event loop would stall
every other episode's calls for seconds).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cudaenv.gateway.apis import Api
from cudaenv.gateway.steps import ToolResult, tool_results

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["INLINE_JSON_BYTES", "encode", "inspect", "off_loop", "read_body", "token_of",
           "usage_expected"]  # fmt: skip

INLINE_JSON_BYTES = 64 * 1024  # larger bodies are parsed and encoded off the event loop
READ_CHUNK = 256 * 1024


async def read_body(request: web.Request, limit: int) -> bytes | None:
    """The request body as it arrives, or None as soon as it passes ``limit`` bytes (a
    declared length over it: before reading any)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.content.iter_chunked(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def off_loop(raw: bytes, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a thread when the body is large (a 30 MB JSON parse would stall every
    other session's calls), else here."""
    if len(raw) > INLINE_JSON_BYTES:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


def inspect(
    raw: bytes, api: Api, open_calls: list[str]
) -> tuple[dict[str, Any], dict[str, ToolResult]] | None:
    """The request as JSON, and the results it carries for the session's open tool calls."""
    payload = json_object(raw)
    if payload is None:
        return None
    return payload, tool_results(api, payload, open_calls)


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def usage_expected(api: Api, payload: dict[str, Any]) -> bool:
    """Whether the reply must report usage: all do, but a chat stream only when asked."""
    if api != "chat" or payload.get("stream") is not True:
        return True
    options = payload.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def token_of(request: web.Request) -> str | None:
    """The session token a client sends as its API key (bearer, ``x-api-key`` or ``api-key``)."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get("x-api-key") or request.headers.get("api-key")
