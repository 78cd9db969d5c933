"""Local sandbox latencies and footprint, side by side in one run (medians, milliseconds).

Why: exec overhead over a plain ``subprocess.run`` must stay <= 2 ms and creation <= 20 ms
(an RL step runs several commands), and a hundred idle sandboxes must fit in <= 200 MB.
Raw and sandbox execs are interleaved so that load from other processes hits both alike.

    PYTHONPATH=. python bench/bench_sandbox_local.py [-n 300] [--idle 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from rich.console import Console
from rich.table import Table

from cudaenv.sandbox._host import probe_bwrap
from cudaenv.sandbox.local import LocalSandbox


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[int(q * (len(ordered) - 1))]


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (via /proc/*/task/*/children)."""
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                for child in fh.read().split():
                    found += _tree(int(child))
    except OSError:
        pass
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process, in kB."""
    values = {"Pss:": 0, "Rss:": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                key, value, *_ = line.split()
                if key in values:
                    values[key] = int(value)
    except OSError:
        pass
    return values["Pss:"], values["Rss:"]


def bench_exec(mode: str, n: int) -> dict[str, list[float]]:
    """Interleaved samples (ms) of raw ``bash -c true`` and the sandbox's exec of ``true``."""
    raw: list[float] = []
    box_ms: list[float] = []
    with LocalSandbox(isolation=mode) as box:  # type: ignore[arg-type]
        for _ in range(10):
            box.exec("true", timeout=10)
            subprocess.run(["bash", "-c", "true"], check=True)
        for _ in range(n):
            start = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], check=True)
            raw.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            box.exec("true", timeout=10)
            box_ms.append((time.perf_counter() - start) * 1000)
    return {"raw": raw, "box": box_ms}


def bench_create(mode: str, n: int) -> tuple[list[float], list[float]]:
    """Creation and first exec (which starts the namespace) times, in ms."""
    LocalSandbox(isolation=mode).close()  # type: ignore[arg-type]
    create, first = [], []
    for _ in range(n):
        start = time.perf_counter()
        box = LocalSandbox(isolation=mode)  # type: ignore[arg-type]
        create.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        box.exec("true", timeout=10)
        first.append((time.perf_counter() - start) * 1000)
        box.close()
    return create, first


def bench_idle(mode: str, count: int) -> tuple[float, float, int, float]:
    """(PSS MB, RSS MB, processes, close-all s) of ``count`` sandboxes after one exec each."""
    boxes = [LocalSandbox(isolation=mode) for _ in range(count)]  # type: ignore[arg-type]
    for box in boxes:
        box.exec("true", timeout=10)
    time.sleep(0.5)
    pids = [p for box in boxes for p in _tree(box._state.runtime.proc.pid)]  # type: ignore[union-attr]
    pss = sum(_memory_kb(p)[0] for p in pids) / 1024
    rss = sum(_memory_kb(p)[1] for p in pids) / 1024
    start = time.perf_counter()
    for box in boxes:
        box.close()
    return pss, rss, len(pids), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="samples for the exec rows")
    parser.add_argument("--idle", type=int, default=100, help="sandboxes for the memory row")
    args = parser.parse_args()
    modes = (["bubblewrap"] if probe_bwrap() else []) + ["rlimits"]
    table = Table(title=f"LocalSandbox on {os.cpu_count()} CPUs (ms: median / p90)")
    for col in ("measure", *modes):
        table.add_column(col, justify="left" if col == "measure" else "right")
    rows: dict[str, list[str]] = {}

    def put(name: str, value: str) -> None:
        rows.setdefault(name, []).append(value)

    for mode in modes:
        ex = bench_exec(mode, args.n)
        raw, box = ex["raw"], ex["box"]
        put(
            "raw subprocess.run(bash -c true)",
            f"{statistics.median(raw):.2f} / {_pct(raw, 0.9):.2f}",
        )
        put("sandbox exec('true')", f"{statistics.median(box):.2f} / {_pct(box, 0.9):.2f}")
        diffs = [b - r for r, b in zip(raw, box, strict=True)]
        put(
            "overhead (median of paired diffs)",
            f"{statistics.median(diffs):.2f} (target <= 2)",
        )
        create, first = bench_create(mode, max(20, args.n // 10))
        put("creation", f"{statistics.median(create):.2f} / {_pct(create, 0.9):.2f} (<= 20)")
        put("first exec (starts the namespace)", f"{statistics.median(first):.1f}")
        pss, rss, procs, close_s = bench_idle(mode, args.idle)
        put(f"{args.idle} idle sandboxes: PSS MB", f"{pss:.0f} (<= 200)")
        put(f"{args.idle} idle sandboxes: RSS MB / processes", f"{rss:.0f} / {procs}")
        put(f"close all {args.idle} (s)", f"{close_s:.2f}")
    for name, values in rows.items():
        table.add_row(name, *values)
    Console().print(table)


if __name__ == "__main__":
    main()
