"""Where connections come in, and how many each may hold: no sandbox can exhaust the host.

Why: the gateway runs in the trainer's process, so a connection a sandbox opens and keeps
idle holds one of that process's file descriptors; twenty thousand of them and the host can
neither open a file nor accept a connection. So every session has a Unix socket of its own
(the only one mounted into its sandbox), and every listener counts its connections
(:class:`Gate`): past the session's ``max_connections``, or past what the process's
descriptor limit leaves (:func:`connection_cap`), a connection is closed as soon as it is
accepted. A connection on a session's socket is bound to that session: it may only use
that session's token. aiohttp also closes a connection that sends nothing within its
keep-alive timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudaenv.gateway.session import Session

__all__ = ["Door", "Gate", "Tally", "connection_cap"]

RESERVED_FDS = 64  # at least this many descriptors stay free for everything else
RESERVED_SHARE = 4  # and a quarter of the limit


def connection_cap() -> int:
    """How many connections the whole gateway may hold: the process's descriptor limit, less
    a reserve for files, sandboxes and the upstream connections."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    return max(16, soft - max(RESERVED_FDS, soft // RESERVED_SHARE))


class Tally:
    """The gateway's open connections across all its listeners."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open = 0
        self.refused = 0


class Gate:
    """One listener's connections: counted against its own limit and the gateway's tally;
    ``session``: the session the listener belongs to (None: the shared ones)."""

    def __init__(self, tally: Tally, session: Session | None = None) -> None:
        self.tally = tally
        self.session = session
        self.limit = session.config.limits.max_connections if session is not None else None
        self.transports: set[asyncio.BaseTransport] = set()

    def enter(self, transport: asyncio.BaseTransport) -> bool:
        full = self.limit is not None and len(self.transports) >= self.limit
        if full or self.tally.open >= self.tally.cap:
            self.tally.refused += 1
            if self.session is not None:
                self.session.refused_connections += 1
            return False
        self.transports.add(transport)
        self.tally.open += 1
        return True

    def leave(self, transport: asyncio.BaseTransport) -> None:
        if transport in self.transports:
            self.transports.discard(transport)
            self.tally.open -= 1

    def close_all(self) -> None:
        """Abort every connection (the session is over)."""
        for transport in list(self.transports):
            with contextlib.suppress(Exception):
                transport.abort()


class Door(asyncio.Protocol):
    """A connection let in by its :class:`Gate` (else closed at once), then served by
    aiohttp's protocol (``inner``), to which every event is handed on."""

    def __init__(self, gate: Gate, inner: Callable[[], asyncio.Protocol]) -> None:
        self._gate = gate
        self._factory = inner
        self._inner: Any = None
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._gate.enter(transport):
            transport.abort()  # the descriptor is freed now, not at a timeout
            return
        self._transport = transport
        self._inner = self._factory()
        self._inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._inner is None or self._transport is None:
            return
        self._gate.leave(self._transport)
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def session_of(self) -> Session | None:
        return self._gate.session
