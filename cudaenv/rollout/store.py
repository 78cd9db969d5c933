"""An append-only JSONL results store that makes runs resumable.

Every result is appended (and flushed, fsync'd) the moment it exists, so a crash or Ctrl-C
loses nothing already finished; a rerun with the same directory reads the keys back and
skips them. A torn last line from a killed writer is ignored on read.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock


class ResultStore:
    """``<dir>/<name>.jsonl``; each record carries a ``key`` identifying its unit of work."""

    def __init__(self, directory: str | Path, name: str = "results") -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"{name}.jsonl"
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(self.path) + ".lock")

    def records(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open("r", encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn line from a killed writer
                if isinstance(rec, dict):
                    yield rec

    def done_keys(self) -> set[str]:
        return {str(r["key"]) for r in self.records() if "key" in r}

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock, self._file_lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
