"""The gateway: an aiohttp proxy on 127.0.0.1, a shared Unix socket and one socket per
session (the one its sandbox gets), one session per episode.

A client (a CLI in the sandbox) sends its session token as its API key; the gateway finds
the session (on a session's own socket, only that session's token is accepted), resolves
the path to one of a closed set of routes (:func:`~cudaenv.gateway.apis.resolve`), reads
the body as it arrives up to the session's limit (JSON of a large body is parsed off the
event loop), admits the call against its budget (reserving its output tokens), rewrites the
model name (pinned per session), the capped output limit and the ``extra_body``/token
fields when configured, keeps only an allow-list of the client's headers, swaps the token
for the upstream's real key and forwards to the upstream's fixed API root. The reply goes
back as the upstream sent it: status, headers (hop-by-hop ones aside) and body bytes; a
server-sent-event stream is relayed chunk by chunk as it arrives. Only a credential inside
a reply is changed (:mod:`cudaenv.gateway.redact`). After the last chunk and before the
stream's end the call is captured into the session, so a client that has read a reply to
its end finds it recorded. What one session may hold at once (body bytes, requests,
connections) is bounded by its :class:`~cudaenv.gateway.config.SessionLimits`
(:mod:`cudaenv.gateway.listeners`).

``with Gateway() as gw`` runs it on a background thread with its own event loop (for the
synchronous env and agents); ``async with Gateway() as gw`` runs it on the caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
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
from cudaenv.gateway.apis import Api, Route, error_body, family_of, resolve
from cudaenv.gateway.config import SessionConfig
from cudaenv.gateway.forward import (
    Exchange,
    client_headers,
    output_limit,
    record_exchange,
    rewrite,
    upstream_headers,
)
from cudaenv.gateway.intake import encode, inspect, off_loop, read_body, token_of, usage_expected
from cudaenv.gateway.listeners import Door, Gate, Tally, connection_cap
from cudaenv.gateway.session import Grant, Session

try:
    import aiohttp
    import yarl
    from aiohttp import web
except ImportError:  # pragma: no cover - the extra is missing
    raise MissingExtraError("aiohttp", "gateway") from None

__all__ = ["TOKEN_PREFIX", "Gateway"]

TOKEN_PREFIX = "cgw-"  # a session token: "cgw-" and 43 url-safe characters (256 bits)
SOCKET_NAME = "gateway.sock"


class Gateway:
    """The host-side model proxy (module docstring).

    Args:
        host / port: the TCP address (port 0: an ephemeral one, see :attr:`port`).
        socket_path: the shared Unix socket; None = ``gateway.sock`` in a new private
            directory; ``False``: no sockets (no session gets one either).
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
        self.tally = Tally(0)  # sized at start, from the descriptor limit
        self._runner: web.AppRunner | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._session_servers: dict[str, tuple[asyncio.AbstractServer | None, Gate]] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._socket_ids = itertools.count()
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
        """The shared Unix socket (host-side clients; a sandbox gets its session's)."""
        return self._socket_path if self._want_socket else None

    @property
    def serving(self) -> bool:
        """Started and not stopped (a stopped gateway fails every episode using it)."""
        running = self._thread is None or self._thread.is_alive()
        return self._runner is not None and running

    # ------------------------------------------------------------------ sessions
    def open_session(self, config: SessionConfig | None = None, /, **fields: Any) -> Session:
        """A new session with a fresh random token (``config``, or its fields as keywords);
        on a started gateway with sockets, with a Unix socket of its own
        (:attr:`Session.socket_path <cudaenv.gateway.session.Session.socket_path>`)."""
        if config is None:
            try:
                config = SessionConfig(**fields)
            except ValueError as exc:
                raise SpecError(f"bad gateway session config: {exc}") from exc
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        session = Session(token, config, clock=self.clock)
        self.sessions[token] = session
        if self._want_socket and self._tmpdir is not None and self._loop is not None:
            path = Path(self._tmpdir) / f"s{next(self._socket_ids)}.sock"
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(path))
            sock.listen(64)  # connections queue until the loop serves it, a moment later
            os.chmod(path, 0o666)  # any uid in a sandbox; the directory is private
            session.socket_path = path
            gate = Gate(self.tally, session)
            self._session_servers[token] = (None, gate)
            asyncio.run_coroutine_threadsafe(self._serve_session(token, sock, gate), self._loop)
        return session

    async def _serve_session(self, token: str, sock: socket.socket, gate: Gate) -> None:
        if token not in self._session_servers or self._runner is None:
            sock.close()  # closed before it was served
            return
        server = await asyncio.get_running_loop().create_unix_server(
            self._door(gate), sock=sock, backlog=64
        )
        if token not in self._session_servers:  # closed while it was being served
            server.close()
            gate.close_all()
            return
        self._session_servers[token] = (server, gate)

    def _end_listener(self, token: str) -> None:
        """On the loop: stop a session's socket and drop its connections."""
        server, gate = self._session_servers.pop(token, (None, None))
        if server is not None:
            server.close()
        if gate is not None:
            gate.close_all()
        self._slots.pop(token, None)

    def close_session(self, session: Session | str) -> Session:
        """End a session: its token is refused from now on, its socket and connections are
        closed; its records stay readable."""
        token = session if isinstance(session, str) else session.token
        found = self.sessions.pop(token, None) or (
            session if isinstance(session, Session) else None
        )
        if found is None:
            raise KeyError("no such gateway session")
        found.close()
        if found.socket_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(found.socket_path)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop is shutting down
                loop.call_soon_threadsafe(self._end_listener, token)
        return found

    # ------------------------------------------------------------------ lifecycle
    def _door(self, gate: Gate) -> Callable[[], Door]:
        assert self._runner is not None
        server = self._runner.server
        assert server is not None
        return lambda: Door(gate, server)

    async def astart(self) -> Gateway:
        """Listen on the TCP address and the shared socket, on the running loop."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.tally.cap = connection_cap()
        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None),
        )
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # lingering_time=0: a refused body is not drained, its connection closes at once
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, lingering_time=0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        shared = Gate(self.tally)
        self._servers.append(await loop.create_server(self._door(shared), sock=sock, backlog=1024))
        if self._want_socket:
            self._tmpdir = tempfile.mkdtemp(prefix="cudaenv-gateway-")
            if self._socket_path is None:
                self._socket_path = Path(self._tmpdir) / SOCKET_NAME
            self._servers.append(
                await loop.create_unix_server(
                    self._door(shared), path=str(self._socket_path), backlog=1024
                )
            )
            os.chmod(self._socket_path, 0o666)  # any uid in a sandbox; the directory is private
        return self

    async def aclose(self) -> None:
        for token in list(self._session_servers):
            self._end_listener(token)
        for server in self._servers:
            server.close()
        self._servers = []
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

    def _session_of(self, request: web.Request) -> Session | None:
        """The request's session: its token's, and on a session's own socket only that one."""
        session = self.sessions.get(token_of(request) or "")
        transport = request.transport
        door = transport.get_protocol() if transport is not None else None
        bound = door.session_of() if isinstance(door, Door) else None
        if bound is not None and bound is not session:
            return None
        return session

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        start, started_at = time.perf_counter(), time.time()
        method, path = request.method, request.path
        if path in ("/healthz", "/health") and method in ("GET", "HEAD"):
            return web.Response(text="ok")
        session = self._session_of(request)
        if session is None:
            return self._error(
                path, 401, "cudaenv gateway: unknown or closed session token", "invalid_api_key"
            )
        base = {"method": method, "path": path[:500], "started_at": started_at}
        target = resolve(method, request.raw_path)
        if target is None:
            message = f"cudaenv gateway: no endpoint {method} {path[:200]}"
            session.record(**base, api=None, status=404, error=message, fault="agent")
            return self._error(path, 404, message)
        slots = self._slots.get(session.token)
        if slots is None:
            slots = asyncio.Semaphore(session.config.limits.max_concurrent_requests)
            self._slots[session.token] = slots
        async with slots:
            return await self._admitted(
                request, session, target, {**base, "api": target.api}, start
            )

    async def _admitted(
        self,
        request: web.Request,
        session: Session,
        target: Route,
        fields: dict[str, Any],
        start: float,
    ) -> web.StreamResponse:
        """A request in one of its session's slots: read, admitted, forwarded, recorded."""
        path, api = request.path, target.api
        limit = session.config.limits.max_body_bytes
        raw = await read_body(request, limit)
        if raw is None:
            message = (
                f"cudaenv gateway: the request body is over this session's limit of {limit} bytes"
            )
            session.record(**fields, status=413, error=message, fault="agent",
                           latency_s=time.perf_counter() - start)  # fmt: skip
            return self._error(path, 413, message)
        body, grant, wants_usage = raw, None, True
        if api is not None:
            parsed = await off_loop(raw, inspect, raw, api, session.open_calls())
            if parsed is None:
                return self._error(path, 400, "cudaenv gateway: the request body is not JSON")
            payload, results = parsed
            fields.update(requested_model=payload.get("model"), stream=bool(payload.get("stream")),
                          agent_turn=bool(payload.get("tools")), tool_results=results)  # fmt: skip
            admitted = session.admit(output_limit(api, payload))
            if not isinstance(admitted, Grant):
                session.record(**fields, status=admitted.status, error=admitted.message,
                               refused=admitted.reason, latency_s=time.perf_counter() - start)  # fmt: skip
                return self._error(path, admitted.status, admitted.message, "budget_exceeded")
            grant = admitted
            payload, changed = rewrite(api, payload, session.config, grant.cap)
            fields["model"] = payload.get("model")
            wants_usage = usage_expected(api, payload)
            if changed:
                body = await off_loop(raw, encode, payload)
        exchange = Exchange(request, session, body, start, target)
        exchange.grant, exchange.usage_expected = grant, wants_usage
        try:
            return await self._forward(exchange, api, fields)
        finally:
            if not exchange.recorded:
                record_exchange(exchange, api, fields)

    async def _forward(
        self, ex: Exchange, api: Api | None, fields: dict[str, Any]
    ) -> web.StreamResponse:
        assert self._client is not None
        request, session = ex.request, ex.session
        upstream = session.config.upstream
        # the canonical route under the fixed API root, taken as is (encoded=True: no
        # normalising of anything after the root, which has no dot segment by its validator)
        url = yarl.URL(upstream.base_url + ex.target.target, encoded=True)
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
                    record_exchange(ex, api, fields)
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
                ex.fault = "infrastructure"
                ex.error = (
                    f"cudaenv gateway: the upstream did not answer within {upstream.timeout_s:g} s"
                )
            return self._cut(ex, 400 if by_wall else 504)
        except (aiohttp.ClientError, OSError) as exc:
            ex.fault = "infrastructure"
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
