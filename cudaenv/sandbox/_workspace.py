"""Workspace file access that cannot be steered outside the workspace.

The agent owns the workspace and may run commands while we read or write it, so paths are
never resolved up front and then reused: every component is opened relative to its parent's
file descriptor with O_NOFOLLOW, and a symlink is followed by hand only while it stays inside
(an absolute target, or one climbing above the root, raises :class:`SandboxPathError`).
Files are replaced by rename, so a hard link planted by the agent is never written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from cudaenv.errors import SandboxPathError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def resolve(root: Path, path: str | None, *, want_dir: bool = False) -> list[str]:
    """Root-relative components of ``path``, symlinks inside the root followed by hand.

    Refuses absolute paths, ``..``, NUL and anything resolving outside; with ``want_dir`` the
    result must be an existing directory.
    """
    if not isinstance(path, str) or not path or "\0" in path or path.startswith("/"):
        raise SandboxPathError(f"not a relative workspace path: {path!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SandboxPathError(f"'..' is not allowed in workspace paths: {path!r}")
    resolved: list[str] = []
    todo = list(reversed(parts))
    hops = 0
    missing = False
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":  # only from a link's target
            if not resolved:
                raise SandboxPathError(f"{path!r} resolves outside the workspace")
            resolved.pop()
            missing = False
            continue
        info = None
        if not missing:  # below a missing directory nothing exists (and nothing is a link)
            fd = open_dir(root, resolved)
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                missing = True
            finally:
                os.close(fd)
        if info is not None and stat.S_ISLNK(info.st_mode):
            hops += 1
            fd = open_dir(root, resolved)
            try:
                target = os.readlink(part, dir_fd=fd)
            finally:
                os.close(fd)
            if target.startswith("/") or hops > 40:
                raise SandboxPathError(f"{path!r} resolves outside the workspace")
            todo.extend(reversed([p for p in target.split("/") if p]))
            continue
        resolved.append(part)
    if want_dir:
        os.close(open_dir(root, resolved))
    return resolved


def open_dir(root: Path, parts: list[str], create: bool = False) -> int:
    """An fd of directory ``parts`` under ``root``, walked with O_NOFOLLOW (no link crossed)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise SandboxPathError(f"{'/'.join(parts)!r} is not a directory") from exc
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: Path, path: str, data: str | bytes) -> None:
    """Create or replace a file (parents made), by writing a temp file and renaming it."""
    parts = resolve(root, path)
    if not parts:
        raise SandboxPathError(f"not a file path: {path!r}")
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd = open_dir(root, parts[:-1], create=True)
    tmp = f".cudaenv-tmp-{secrets.token_hex(6)}"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(tmp, flags, 0o644, dir_fd=fd)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
        os.replace(tmp, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise
    finally:
        os.close(fd)


def read_file(root: Path, path: str) -> bytes:
    """A regular file's bytes (a FIFO or device planted by the agent is refused, not opened)."""
    parts = resolve(root, path)
    if not parts:
        raise SandboxPathError(f"not a file path: {path!r}")
    fd = open_dir(root, parts[:-1])
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            handle = os.open(parts[-1], flags, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SandboxPathError(f"{path!r} resolves outside the workspace") from exc
            raise
    finally:
        os.close(fd)
    with os.fdopen(handle, "rb") as fh:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise SandboxPathError(f"{path!r} is not a regular file")
        return fh.read()


def list_files(root: Path) -> list[str]:
    """Every regular file under ``root`` (links not followed), sorted relative POSIX paths."""
    found = []
    for dirpath, _, filenames, dirfd in os.fwalk(root, follow_symlinks=False):
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode):
                    found.append(name if rel == "." else f"{rel}/{name}")
    return sorted(found)
