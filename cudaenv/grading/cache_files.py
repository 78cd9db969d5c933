"""Writing cache entries so that concurrent writers and a full disk cost only the cache.

Every cache entry is written to a temporary file with a unique name in the entry's own
directory and renamed over the entry (atomic on POSIX): readers see the old entry or the new
one, never a half-written one, and concurrent writers of one key never share a temporary
file (a fixed ``<key>.json.tmp`` let one writer rename another's file away mid-write; four
processes lost 34 of 1,200 writes, each an infrastructure verdict). A cache is an
optimisation: a failed write (ENOSPC, a read-only directory) warns and returns False, and the
grading it would have stored stands.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path


class CacheWriteWarning(UserWarning):
    """A cache entry could not be written; the result it held is still returned."""


def warn_failed(what: str, path: Path, exc: OSError) -> None:
    warnings.warn(
        f"cudaenv cache: could not write {what} {path} ({exc.strerror or exc}); "
        "the result stands, only the cache missed it",
        CacheWriteWarning,
        stacklevel=3,
    )


def write_atomic(path: Path, text: str, *, what: str = "entry") -> bool:
    """Write ``text`` to ``path`` via a unique temporary file and a rename; False on failure."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
        return True
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        warn_failed(what, path, exc)
        return False


def temp_dir_beside(target: Path) -> Path:
    """A fresh, uniquely named directory next to ``target`` (to fill, then rename over it)."""
    return Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))


def remove_tree(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
