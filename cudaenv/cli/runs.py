"""What ``eval`` and ``grade`` share about their output directory and about Ctrl-C.

* the ``--out`` directory is claimed (:func:`cudaenv.rollout.store.claim_dir`: created, proved
  writable, locked) before any work starts, so an unwritable or busy directory is one line and
  exit 2, not a traceback after the first episode.
* :func:`stop_on_interrupt`: the first Ctrl-C raises ``KeyboardInterrupt`` (the run stops and
  abandons what is running); later ones while it stops are noted and ignored, so a second
  Ctrl-C cannot cut the stop short and let half-graded work reach the store.
* :func:`write_summary`: ``summary.json`` replaced atomically; a full disk is one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cudaenv.errors import OutDirError

INTERRUPTED_EXIT = 130


@contextlib.contextmanager
def stop_on_interrupt() -> Iterator[dict[str, int]]:
    """Run the block until its end or the first Ctrl-C (the ``KeyboardInterrupt`` ends the
    block and is swallowed); ``seen["signals"]`` counts the SIGINTs, 0 if it ran to its end."""
    seen = {"signals": 0}

    def handler(signum: int, frame: object) -> None:
        seen["signals"] += 1
        if seen["signals"] == 1:
            raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, handler) if in_main else None
    try:
        yield seen
    except KeyboardInterrupt:
        seen["signals"] = max(seen["signals"], 1)
    finally:
        if in_main:  # once stopping, later Ctrl-Cs are only counted, while the summary is written
            signal.signal(signal.SIGINT, _count(seen) if seen["signals"] else previous)


def _count(seen: dict[str, int]) -> Callable[[int, object], None]:
    def handler(signum: int, frame: object) -> None:
        seen["signals"] += 1

    return handler


def interrupted_line(stored: int, total: int, what: str) -> str:
    """The one line an interrupted run prints."""
    return (
        f"interrupted: {stored} of {total} {what} stored; unfinished ones were abandoned, "
        "not stored; rerun with the same --out to resume"
    )


def write_summary(out: Path, summary: dict[str, Any]) -> Path:
    """Write ``out/summary.json`` atomically (a unique temp file, then rename)."""
    path = out / "summary.json"
    tmp = out / f".summary.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        tmp.write_text(json.dumps(summary, indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutDirError(
            f"cannot write {path}: {exc.strerror or exc} (the results already stored are kept)"
        ) from None
    return path
