"""An append-only JSONL results store that makes runs resumable, and the claim on its directory.

Every result is appended as one whole line (one ``write`` on an ``O_APPEND`` descriptor, then
fsync'd) the moment it exists, so a crash or Ctrl-C loses nothing already finished; a rerun with
the same directory reads the keys back and skips them. A write that fails part-way (a full
disk) is cut back, so the file never ends in half a record. A torn tail left by a writer that
was killed mid-line is repaired before the next append (kept aside in ``<name>.jsonl.torn``),
so the next record is never glued onto it and lost.

:func:`claim_dir` makes sure that one process at a time writes a directory: two runs sharing
an ``--out`` would otherwise each run every episode.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

from cudaenv.errors import OutDirBusyError, OutDirError

LOCK_NAME = ".cudaenv-run.lock"


def _unusable(directory: Path, exc: OSError) -> OutDirError:
    why = exc.strerror or str(exc)
    return OutDirError(f"cannot write results to {directory}: {why}")


class ResultStore:
    """``<dir>/<name>.jsonl``; each record carries a ``key`` identifying its unit of work."""

    def __init__(self, directory: str | Path, name: str = "results") -> None:
        self.dir = Path(directory)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _unusable(self.dir, exc) from None
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
                    continue  # a torn line from a killed writer (repaired at the next append)
                if isinstance(rec, dict):
                    yield rec

    def done_keys(self) -> set[str]:
        return {str(r["key"]) for r in self.records() if "key" in r}

    def append(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one whole, fsync'd line; :class:`OutDirError` if it cannot be
        (the records already stored are untouched)."""
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock, self._file_lock:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise _unusable(self.dir, exc) from None
            try:
                self._repair_tail(fd)
                start = os.fstat(fd).st_size
                try:
                    written = os.write(fd, line)
                    if written != len(line):
                        raise OSError(28, "No space left on device (short write)")
                    os.fsync(fd)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, start)  # never leave half a record behind
                    raise _unusable(self.dir, exc) from None
            finally:
                os.close(fd)

    def _repair_tail(self, fd: int) -> None:
        """End the file on a newline: a complete last record gets its newline, a torn one is cut
        off (and kept in ``<name>.jsonl.torn``), so the next append starts a line of its own."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        with self.path.open("rb") as fh:
            data = fh.read()
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        try:
            json.loads(tail)
        except ValueError:
            with open(str(self.path) + ".torn", "ab") as torn:
                torn.write(tail + b"\n")
            os.ftruncate(fd, cut)
        else:
            os.write(fd, b"\n")
        os.fsync(fd)


class DirClaim:
    """This process's hold on a results directory (an ``flock`` on its lock file).

    Claims nest within one process (``eval`` claims the directory, then ``run_episodes``
    does again); the lock goes when the last claim is released, or when the process dies.
    """

    _held: dict[str, tuple[int, int]] = {}  # realpath -> (fd, claims)
    _guard = threading.Lock()

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._key: str | None = None

    def acquire(self) -> DirClaim:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            key = os.path.realpath(self.dir)
        except OSError as exc:
            raise _unusable(self.dir, exc) from None
        with self._guard:
            if key in self._held:
                fd, n = self._held[key]
                self._held[key] = (fd, n + 1)
                self._key = key
                return self
            fd = self._lock_fd(key)
            self._held[key] = (fd, 1)
            self._key = key
        return self

    def _lock_fd(self, key: str) -> int:
        path = os.path.join(key, LOCK_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unusable(self.dir, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise OutDirBusyError(
                f"{self.dir} is in use by another run (pid {owner}); wait for it to finish "
                "or choose another --out"
            ) from None
        try:  # the pid, for the message a second run prints; also proves the disk takes a write
            os.ftruncate(fd, 0)
            data = f"{os.getpid()}\n".encode()
            if os.pwrite(fd, data, 0) != len(data):
                raise OSError(28, "No space left on device")
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise _unusable(self.dir, exc) from None
        return fd

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None:
            return
        with self._guard:
            fd, n = self._held.pop(key)
            if n > 1:
                self._held[key] = (fd, n - 1)
            else:
                os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> DirClaim:
        return self.acquire() if self._key is None else self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim_dir(directory: str | Path) -> DirClaim:
    """Claim ``directory`` for this process's run: created if needed, checked writable (a pid
    is written and fsync'd into its lock file) and locked against other processes.

    Raises :class:`OutDirError` (one line) if it cannot be written, :class:`OutDirBusyError`
    if another live process holds it. Use as a context manager or call ``release()``.
    """
    return DirClaim(Path(directory)).acquire()
