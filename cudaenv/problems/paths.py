"""Rules for the paths inside a problem: relative POSIX paths that stay inside their root.

These rules stop a spec or a solution from writing outside its workspace (path traversal)
or from shadowing the hidden test files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from cudaenv.errors import UnsafePathError


def check_relative_path(path: str, *, field: str = "path", task_id: str | None = None) -> str:
    """Return ``path`` normalised, or raise :class:`UnsafePathError` if it could escape its root."""
    if not isinstance(path, str) or not path.strip():
        raise UnsafePathError("empty path", field=field, task_id=task_id)
    if "\x00" in path or "\\" in path:
        raise UnsafePathError(
            f"path {path!r} contains a NUL or backslash", field=field, task_id=task_id
        )
    pure = PurePosixPath(path)
    if pure.is_absolute():
        raise UnsafePathError(f"absolute path {path!r} not allowed", field=field, task_id=task_id)
    parts = [p for p in pure.parts if p != "."]
    if any(p == ".." for p in parts):
        raise UnsafePathError(f"path {path!r} contains '..'", field=field, task_id=task_id)
    if not parts:
        raise UnsafePathError(f"path {path!r} names no file", field=field, task_id=task_id)
    return "/".join(parts)


def check_unique(paths: Iterable[str], *, field: str, task_id: str | None = None) -> None:
    """Raise if the same normalised path appears twice."""
    seen: set[str] = set()
    for p in paths:
        if p in seen:
            raise UnsafePathError(f"duplicate path {p!r}", field=field, task_id=task_id)
        seen.add(p)
