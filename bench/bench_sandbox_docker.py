"""Docker sandbox latencies, side by side in one run (medians, milliseconds).

Why: the exec server and the warm pool exist only because ``docker exec`` and cold starts
are slow; this shows by how much, on this machine. Needs dockerd and the test image. The pool
rows are what a pool's caller waits for; a pool never lends a container twice, so the "back
to back" row is bounded by how fast the engine starts containers.

    PYTHONPATH=. python bench/bench_sandbox_docker.py [--image cudaenv-sandbox-test:latest] [-n 100]
    PYTHONPATH=. python bench/bench_sandbox_docker.py --pool-only [--pause-s 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

from cudaenv.sandbox.docker import DockerSandbox, DockerSandboxPool, docker_client


def median_ms(fn: Callable[[], object], n: int, warmup: int = 3) -> tuple[float, float]:
    """Median and 90th percentile of ``n`` timed calls, in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def _stats(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def pool_rows(image: str, n: int, pause_s: float) -> list[tuple[str, int, tuple[float, float]]]:
    """What a pool's caller waits for: acquire when the pool had time to refill (``pause_s``
    after the last release), release, acquire right after a release, and a short episode
    (acquire, 3 commands, release) back to back, which shows the pool's sustained rate."""
    warm, release, hot, episode = [], [], [], []

    def ms(start: float) -> float:
        return (time.perf_counter() - start) * 1000

    with DockerSandboxPool(image, size=2) as pool:
        for i in range(n + 2):
            time.sleep(pause_s)
            start = time.perf_counter()
            s = pool.acquire()
            took = ms(start)
            s.write_file("f.txt", "x")
            s.exec("sleep 100 >/dev/null 2>&1 &", timeout=10)
            start = time.perf_counter()
            pool.release(s)
            gave = ms(start)
            start = time.perf_counter()
            s = pool.acquire()
            again = ms(start)
            pool.release(s)
            if i >= 2:
                warm.append(took)
                release.append(gave)
                hot.append(again)
        time.sleep(pause_s)
        for i in range(n + 2):
            start = time.perf_counter()
            s = pool.acquire()
            for _ in range(3):
                s.exec("true", timeout=10)
            pool.release(s)
            if i >= 2:
                episode.append(ms(start))
    return [
        (f"pool acquire, warm ({pause_s:g} s after a release)", len(warm), _stats(warm)),
        ("pool release (what the caller waits for)", len(release), _stats(release)),
        ("pool acquire right after a release", len(hot), _stats(hot)),
        ("pool episode back to back (acquire, 3 execs, release)", len(episode), _stats(episode)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="cudaenv-sandbox-test:latest")
    parser.add_argument("-n", type=int, default=100, help="samples for the exec rows")
    parser.add_argument("--pause-s", type=float, default=1.5, help="pause before a warm acquire")
    parser.add_argument("--pool-only", action="store_true", help="only the pool rows")
    args = parser.parse_args()
    n_slow = max(min(10, args.n), args.n // 5)  # -n below 10 (a smoke run): n everywhere
    client = docker_client()
    rows: list[tuple[str, int, tuple[float, float]]] = []
    if args.pool_only:
        rows += pool_rows(args.image, n_slow, args.pause_s)
        _print(rows)
        return

    with DockerSandbox(image=args.image) as sb:
        container = client.containers.get(sb.container_name)
        rows.append(
            (
                "exec 'true': cudaenv exec server",
                args.n,
                median_ms(lambda: sb.exec("true", timeout=10), args.n),
            )
        )
        rows.append(
            (
                "exec 64 KiB of output: exec server",
                args.n,
                median_ms(lambda: sb.exec("head -c 65536 /dev/zero", timeout=10), args.n),
            )
        )
        rows.append(
            (
                "exec 'true': docker-py exec_run",
                n_slow,
                median_ms(lambda: container.exec_run(["true"]), n_slow),
            )
        )
        cli = ["docker", "exec", sb.container_name, "true"]
        rows.append(
            (
                "exec 'true': docker exec CLI",
                n_slow,
                median_ms(lambda: subprocess.run(cli, check=True), n_slow),
            )
        )
        blob = b"x" * 1_000_000
        rows.append(
            (
                "write_file+read_file 1 MB: exec server",
                n_slow,
                median_ms(lambda: sb.read_file(sb.write_file("b", blob) or "b"), n_slow),
            )
        )

    rows += pool_rows(args.image, n_slow, args.pause_s)

    def cold_run() -> None:
        c = client.containers.run(
            args.image, ["sleep", "1000"], detach=True, init=True, network_mode="none"
        )
        c.remove(force=True)

    n_cold = max(min(5, args.n), args.n // 10)
    rows.append(("cold containers.run + remove (bare)", n_cold, median_ms(cold_run, n_cold, 1)))
    rows.append(
        (
            "cold DockerSandbox() (run + server ready) + close",
            n_cold,
            median_ms(lambda: DockerSandbox(image=args.image).close(), n_cold, 1),
        )
    )

    _print(rows)


def _print(rows: list[tuple[str, int, tuple[float, float]]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'n':>4}  {'median ms':>9}  {'p90 ms':>8}")
    for name, n, (med, p90) in rows:
        print(f"{name:<{width}}  {n:>4}  {med:>9.1f}  {p90:>8.1f}")


if __name__ == "__main__":
    main()
