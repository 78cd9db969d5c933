#!/usr/bin/env python3
"""Inside the sandbox: ``127.0.0.1:<port>`` relayed to the gateway's Unix socket.

A sandbox without a network (its own network namespace: only a loopback) still reaches the
gateway through the socket bound into it; CLIs want an HTTP URL, so this relays each TCP
connection on the sandbox's loopback to the socket, bytes in both directions, half-closes
passed on. Standard library only and no cudaenv import: it runs as a plain file under
whatever Python the sandbox has (``python3 -I -S forwarder.py ...``).

``--background`` binds and listens first, then forks: the command returns once connections
are accepted (they queue in the backlog), so ``python3 forwarder.py --background ... && cli``
needs no polling. It prints the port it listens on (useful with ``--port 0``) and the pid of
the process that serves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys

DEFAULT_PORT = 4480
CHUNK = 256 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


async def _relay(path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(path)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        up_writer.close()
        writer.close()


async def serve(path: str, sock: socket.socket) -> None:
    """Relay every connection accepted on ``sock`` to the Unix socket ``path``, forever."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("socket")
        if peer is not None:  # asyncio leaves Nagle on for a socket made with proto 0:
            with contextlib.suppress(OSError):  # a small write would wait for a delayed ACK
                peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await _relay(path, reader, writer)

    server = await asyncio.start_server(handle, sock=sock, limit=CHUNK)
    async with server:
        await server.serve_forever()


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    return sock


def _say(line: str) -> None:
    """The one line of output: the port and the serving pid."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--socket", required=True, help="the gateway's Unix socket")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--background", action="store_true", help="fork once listening")
    args = parser.parse_args(argv)
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"forwarder: cannot listen on {args.host}:{args.port}: {exc}\n")
        return 1
    port = sock.getsockname()[1]
    if args.background:
        child = os.fork()
        if child:
            _say(f"{port} {child}")  # the child serves; the socket already queues connections
            return 0
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # a caller reading our output sees it end
    else:
        _say(f"{port} {os.getpid()}")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.socket, sock))
    return 0


if __name__ == "__main__":
    sys.exit(main())
