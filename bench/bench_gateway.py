"""Gateway overhead, side by side with direct calls (medians / p90, milliseconds).

Why: a CLI episode makes hundreds of model calls; the gateway must add <= 2 ms median to a
non-streaming call and to a stream's time to first byte, and serve 64 concurrent sessions
without an error. The upstream is a small aiohttp server in its own process (fixed chat
completion, and a 20-event stream whose first event is written at once); the gateway runs
in another process, so the client, the gateway and the upstream do not share one GIL.
Direct, gateway (TCP) and gateway via the sandbox path (forwarder -> the session's Unix
socket) calls are interleaved on kept-alive connections so that load from other processes
hits all alike; "+gateway" is the median of the paired differences, and the gateway process's CPU time per
call (from /proc) is printed beside it: on a loaded machine the wall-clock figures mostly
measure the scheduler, the CPU time less so.

    PYTHONPATH=. python bench/bench_gateway.py [-n 400] [--sessions 64] [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

KEY = "sk-bench-upstream-key-0123456789"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi " * 200}]}
TEXT = "x" * 400


def _completion() -> bytes:
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": TEXT},
        "finish_reason": "stop",
    }
    usage = {"prompt_tokens": 210, "completion_tokens": 100, "total_tokens": 310}
    return json.dumps(
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice],
         "usage": usage}
    ).encode()  # fmt: skip


def _events() -> list[bytes]:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = [
        f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {'content': TEXT[i : i + 20]}}]})}\n\n".encode()
        for i in range(0, len(TEXT), 20)
    ]
    return [*out, b"data: [DONE]\n\n"]


def _upstream(queue: Any) -> None:
    from aiohttp import web

    whole, events = _completion(), _events()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.Response(body=whole, content_type="application/json")
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for event in events:
            await resp.write(event)
        await resp.write_eof()
        return resp

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        queue.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _gateway(upstream_port: int, sessions: int, queue: Any) -> None:
    from cudaenv.gateway import Gateway, Upstream

    with Gateway() as gw:
        up = Upstream(base_url=f"http://127.0.0.1:{upstream_port}/v1", api_key=KEY)
        opened = [gw.open_session(upstream=up) for _ in range(sessions)]
        # the sandbox path: a session's own socket where the gateway has them (the shared one
        # before), so a side-by-side run against an older checkout measures what a CLI uses
        sock = getattr(opened[0], "socket_path", None) or gw.socket_path
        queue.put((gw.port, str(sock), [s.token for s in opened]))
        while True:
            time.sleep(3600)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[int(q * (len(ordered) - 1))]


def _one(conn: http.client.HTTPConnection, token: str, stream: bool) -> float:
    """ms to the whole reply (non-streaming) or to its first body byte (streaming)."""
    data = json.dumps({**BODY, "stream": stream})
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", data, headers)
    resp = conn.getresponse()
    if stream:
        resp.read(1)
        first = time.perf_counter()
        resp.read()
        return (first - start) * 1000
    resp.read()
    return (time.perf_counter() - start) * 1000


def latency(ports: dict[str, int], token: str, n: int, stream: bool) -> dict[str, list[float]]:
    conns = {k: http.client.HTTPConnection("127.0.0.1", p, timeout=30) for k, p in ports.items()}
    samples: dict[str, list[float]] = {k: [] for k in ports}
    for i in range(n + 20):  # the first 20 warm the connections
        for name, conn in conns.items():
            ms = _one(conn, KEY if name == "direct" else token, stream)
            if i >= 20:
                samples[name].append(ms)
    for conn in conns.values():
        conn.close()
    return samples


async def concurrent(port: int, tokens: list[str], calls: int) -> tuple[int, int, float]:
    """(ok, errors, seconds) of ``calls`` calls per session, every session at once."""
    import aiohttp

    async def session(client: aiohttp.ClientSession, token: str) -> tuple[int, int]:
        ok = bad = 0
        for i in range(calls):
            body = {**BODY, "stream": i % 2 == 1}
            headers = {"authorization": f"Bearer {token}"}
            try:
                async with client.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                                       json=body, headers=headers) as resp:  # fmt: skip
                    data = await resp.read()
                    good = resp.status == 200 and (TEXT[:20].encode() in data)
            except aiohttp.ClientError:
                good = False
            ok, bad = ok + good, bad + (not good)
        return ok, bad

    start = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as client:
        results = await asyncio.gather(*(session(client, t) for t in tokens))
    return sum(r[0] for r in results), sum(r[1] for r in results), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=400, help="samples per latency row")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--calls", type=int, default=20, help="calls per concurrent session")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_upstream, args=(queue,), daemon=True)]
    procs[0].start()
    upstream_port = queue.get(timeout=60)
    procs.append(
        ctx.Process(target=_gateway, args=(upstream_port, args.sessions, queue), daemon=True)
    )
    procs[1].start()
    gw_port, sock, tokens = queue.get(timeout=60)
    from cudaenv.gateway import FORWARDER

    fwd = subprocess.Popen(
        [sys.executable, "-I", "-S", str(FORWARDER), "--socket", sock, "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert fwd.stdout is not None
        fwd_port = int(fwd.stdout.readline().split()[0])
        ports = {"direct": upstream_port, "gateway": gw_port, "via socket": fwd_port}
        table = Table(title=f"gateway overhead on {os.cpu_count()} CPUs (ms: median / p90)")
        columns = ("measure", *ports, "+gateway", "+via socket", "gateway CPU/call")
        for col in columns:
            table.add_column(col, justify="left" if col == "measure" else "right")
        for stream, what in ((False, "non-streaming call"), (True, "stream: first byte")):
            cpu = _cpu_s(procs[1].pid)
            s = latency(ports, tokens[0], args.n, stream)
            per_call = (_cpu_s(procs[1].pid) - cpu) / (2 * (args.n + 20)) * 1000
            cells = [f"{statistics.median(v):.2f} / {_pct(v, 0.9):.2f}" for v in s.values()]
            for name in ("gateway", "via socket"):
                diffs = [g - d for d, g in zip(s["direct"], s[name], strict=True)]
                cells.append(f"{statistics.median(diffs):.2f} (<= 2)")
            table.add_row(what, *cells, f"{per_call:.2f}")
        Console().print(table)
        ok, bad, secs = asyncio.run(concurrent(gw_port, tokens, args.calls))
        Console().print(
            f"{len(tokens)} concurrent sessions x {args.calls} calls (half streamed): "
            f"{ok} ok, {bad} errors, {secs:.2f} s ({ok / secs:.0f} calls/s)"
        )
    finally:
        fwd.terminate()
        fwd.wait(timeout=30)
        for proc in procs:
            proc.terminate()


if __name__ == "__main__":
    main()
