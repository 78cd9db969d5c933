"""The gateway: an aiohttp proxy on 127.0.0.1 and a Unix socket, one session per episode.

A client (a CLI in the sandbox) sends its session token as its API key; the gateway finds
the session, admits the call against its budget, rewrites the model name (and the
``extra_body``/token fields) when configured, swaps the token for the upstream's real key
and forwards. The reply goes back as the upstream sent it: status, headers (hop-by-hop ones
aside) and body bytes; a server-sent-event stream is relayed chunk by chunk as it arrives.
Only a credential inside a reply is changed (:mod:`cudaenv.gateway.redact`). After the
last chunk and before the stream's end the call is captured into the session, so a client
that has read a reply to its end finds it recorded.

``with Gateway() as gw`` runs it on a background thread with its own event loop (for the
synchronous env and agents); ``async with Gateway() as gw`` runs it on the caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudaenv.errors import MissingExtraError, SpecError
from cudaenv.gateway.apis import Api, api_of, error_body, family_of, is_aux
from cudaenv.gateway.capture import capped, decoded, summarise
from cudaenv.gateway.config import SessionConfig
from cudaenv.gateway.forward import Exchange, client_headers, rewrite, upstream_headers
from cudaenv.gateway.session import Session

try:
    import aiohttp
    from aiohttp import web
except ImportError:  # pragma: no cover - the extra is missing
    raise MissingExtraError("aiohttp", "gateway") from None

__all__ = ["TOKEN_PREFIX", "Gateway"]

TOKEN_PREFIX = "cgw-"  # a session token: "cgw-" and 43 url-safe characters (256 bits)
SOCKET_NAME = "gateway.sock"
MAX_BODY_BYTES = 64 * 1024 * 1024  # one request body (long CLI conversations exceed 1 MiB)


class Gateway:
    """The host-side model proxy (module docstring).

    Args:
        host / port: the TCP address (port 0: an ephemeral one, see :attr:`port`).
        socket_path: the Unix socket; None = ``gateway.sock`` in a new private directory;
            ``False``: no socket.
        clock: the sessions' clock (budgets); injectable for tests.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        socket_path: str | Path | bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.port = port
        self._want_socket = socket_path is not False
        self._socket_path = Path(socket_path) if isinstance(socket_path, str | Path) else None
        self._tmpdir: str | None = None
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ addresses
    @property
    def base_url(self) -> str:
        """The origin (what ``ANTHROPIC_BASE_URL`` takes); OpenAI clients add ``/v1``."""
        return f"http://{self.host}:{self.port}"

    @property
    def socket_path(self) -> Path | None:
        return self._socket_path if self._want_socket else None

    # ------------------------------------------------------------------ sessions
    def open_session(self, config: SessionConfig | None = None, /, **fields: Any) -> Session:
        """A new session with a fresh random token (``config``, or its fields as keywords)."""
        if config is None:
            try:
                config = SessionConfig(**fields)
            except ValueError as exc:
                raise SpecError(f"bad gateway session config: {exc}") from exc
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        session = Session(token, config, clock=self.clock)
        self.sessions[token] = session
        return session

    def close_session(self, session: Session | str) -> Session:
        """End a session: its token is refused from now on; its records stay readable."""
        token = session if isinstance(session, str) else session.token
        found = self.sessions.pop(token, None) or (
            session if isinstance(session, Session) else None
        )
        if found is None:
            raise KeyError("no such gateway session")
        found.close()
        return found

    # ------------------------------------------------------------------ lifecycle
    async def astart(self) -> Gateway:
        """Listen on the TCP address and the socket, on the running loop."""
        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None),
        )
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, backlog=1024).start()
        if self._want_socket:
            if self._socket_path is None:
                self._tmpdir = tempfile.mkdtemp(prefix="cudaenv-gateway-")
                self._socket_path = Path(self._tmpdir) / SOCKET_NAME
            await web.UnixSite(self._runner, str(self._socket_path), backlog=1024).start()
            os.chmod(self._socket_path, 0o666)  # any uid in a sandbox; the directory is private
        return self

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def start(self) -> Gateway:
        """Run on a background thread with its own event loop; returns once listening."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.astart())
            except BaseException as exc:
                ready.set_exception(exc)
                loop.close()
                return
            ready.set_result(None)
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.aclose())
                loop.close()

        self._thread = threading.Thread(target=main, name="cudaenv-gateway", daemon=True)
        self._thread.start()
        ready.result(timeout=60)
        return self

    def close(self) -> None:
        """Stop the background thread (a no-op when not started with :meth:`start`)."""
        if self._thread is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=60)
            self._thread = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Gateway:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ requests
    @staticmethod
    def _error(path: str, status: int, message: str, code: str | None = None) -> web.Response:
        body = error_body(family_of(path), status, message, code)
        return web.Response(status=status, body=body, content_type="application/json")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        start, started_at = time.perf_counter(), time.time()
        method, path = request.method, request.path
        if path in ("/healthz", "/health") and method in ("GET", "HEAD"):
            return web.Response(text="ok")
        session = self.sessions.get(_token(request) or "")
        if session is None:
            return self._error(
                path, 401, "cudaenv gateway: unknown or closed session token", "invalid_api_key"
            )
        api = api_of(method, path)
        if api is None and not is_aux(method, path):
            return self._error(path, 404, f"cudaenv gateway: no endpoint {method} {path}")
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._error(path, 413, "cudaenv gateway: request body too large")
        base = {"api": api, "method": method, "path": path, "started_at": started_at}
        body, fields = raw, dict(base)
        if api is not None:
            payload = _json_object(raw)
            if payload is None:
                return self._error(path, 400, "cudaenv gateway: the request body is not JSON")
            fields.update(requested_model=payload.get("model"), stream=bool(payload.get("stream")))
            refusal = session.admit()
            if refusal is not None:
                session.record(**fields, status=refusal.status, error=refusal.message,
                               refused=refusal.reason, latency_s=time.perf_counter() - start)  # fmt: skip
                return self._error(path, refusal.status, refusal.message, "budget_exceeded")
            payload, changed = rewrite(api, payload, session.config)
            fields["model"] = payload.get("model")
            if changed:
                body = json.dumps(payload).encode()
        exchange = Exchange(request, session, body, start)
        try:
            return await self._forward(exchange, api, fields)
        finally:
            if not exchange.recorded:
                self._record(exchange, api, fields)

    async def _forward(
        self, ex: Exchange, api: Api | None, fields: dict[str, Any]
    ) -> web.StreamResponse:
        assert self._client is not None
        request, session = ex.request, ex.session
        upstream = session.config.upstream
        url = upstream.base_url + ex.route
        left = session.remaining_s()
        limit = upstream.timeout_s if left is None else max(min(upstream.timeout_s, left), 0.0)
        headers = upstream_headers(request.headers, family_of(request.path), upstream, session.key)
        try:
            async with asyncio.timeout(limit):
                async with self._client.request(
                    request.method, url, data=ex.body, headers=headers
                ) as up:
                    ex.status = up.status
                    ex.encoding = up.headers.get("content-encoding")
                    out_headers = client_headers(up.headers, session.redactor)
                    if up.content_type != "text/event-stream":
                        data = await up.read()
                        ex.first_byte()
                        ex.chunks.append(data)
                        return web.Response(
                            status=up.status, body=session.redactor.bytes(data), headers=out_headers
                        )
                    ex.streamed = True
                    ex.response = web.StreamResponse(status=up.status, headers=out_headers)
                    await ex.response.prepare(request)
                    redactor = session.redactor.stream()
                    async for chunk in up.content.iter_any():
                        ex.first_byte()
                        ex.chunks.append(chunk)
                        if out := redactor.feed(chunk):
                            await ex.response.write(out)
                    if tail := redactor.flush():
                        await ex.response.write(tail)
                    self._record(ex, api, fields)
                    await ex.response.write_eof()
                    return ex.response
        except TimeoutError:
            by_wall = left is not None and left <= upstream.timeout_s
            if by_wall:
                session.trip("gateway_time")
                ex.error = (
                    f"cudaenv gateway: this episode has used up its wall-time budget of "
                    f"{session.config.budget.wall_time_s:g} s during this call (truncated: gateway_time)"
                )
            else:
                ex.error = (
                    f"cudaenv gateway: the upstream did not answer within {upstream.timeout_s:g} s"
                )
            return self._cut(ex, 400 if by_wall else 504)
        except (aiohttp.ClientError, OSError) as exc:
            if ex.response is not None and ex.response.prepared:
                ex.error = f"the stream was cut: {type(exc).__name__}: {exc}"
                return self._cut(ex, 502)
            ex.error = (
                f"cudaenv gateway: the upstream could not be reached: {type(exc).__name__}: {exc}"
            )
            return self._cut(ex, 502)

    def _cut(self, ex: Exchange, status: int) -> web.StreamResponse:
        """The reply to a failed exchange: the API's error, or (stream begun) a cut stream."""
        error = ex.session.redactor.text(ex.error or "cudaenv gateway: failed")
        if ex.response is not None and ex.response.prepared:
            transport = ex.request.transport
            if transport is not None:
                transport.close()  # the client must see a broken stream, not a finished one
            return ex.response
        ex.status = status
        ex.error = error
        return self._error(ex.request.path, status, error)

    @staticmethod
    def _record(ex: Exchange, api: Api | None, fields: dict[str, Any]) -> None:
        """Capture the exchange into its session (once)."""
        ex.recorded = True
        session, cap = ex.session, ex.session.config.body_cap_bytes
        raw = b"".join(ex.chunks)
        plain = session.redactor.bytes(decoded(raw, ex.encoding))  # what is read is clean
        usage, turn, model, error = None, None, None, ex.error
        if api is not None and ex.chunks:
            usage, turn, model, upstream_error = summarise(api, ex.status, plain, ex.streamed)
            error = error or upstream_error
        request_text, request_cut = capped(ex.body, cap, session.redactor)
        response_text, response_cut = capped(plain, cap, session.redactor)
        fields = {**fields, "stream": ex.streamed or bool(fields.get("stream"))}
        session.record(
            **fields, status=ex.status,
            latency_s=time.perf_counter() - ex.start, ttfb_s=ex.ttfb_s,
            usage=usage, turn=turn, response_model=model, error=error,
            request_body=request_text, request_bytes=len(ex.body), request_truncated=request_cut,
            response_body=response_text, response_bytes=len(raw), response_truncated=response_cut,
        )  # fmt: skip


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _token(request: web.Request) -> str | None:
    """The session token a client sends as its API key (bearer, ``x-api-key`` or ``api-key``)."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get("x-api-key") or request.headers.get("api-key")
