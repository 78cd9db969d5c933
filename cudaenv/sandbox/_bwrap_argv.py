"""The bubblewrap command line of a local sandbox: what its commands see and may write.

Why apart: this is the sandbox's whole filesystem and namespace policy (an allow-list of the
host's system directories, hidden temp dirs and problem data, the workspace and the control
FIFOs), so it is read and reviewed on its own; ``local`` only passes it the host's answers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["INNER_CTL", "INNER_WORKSPACE", "SYSTEM_TOP", "bwrap_argv"]

#: Where the workspace and the control directory appear inside a bubblewrap sandbox.
INNER_WORKSPACE = "/workspace"
INNER_CTL = "/run/cudaenv"


def _is_under(path: Path, roots: Iterable[Path]) -> bool:
    """``path`` is one of ``roots`` or inside one (strings: ``Path.parents`` is slow, and this
    runs for every hidden path of every sandbox start)."""
    text = str(path)
    return any(text == str(r) or text.startswith(str(r).rstrip("/") + "/") for r in roots)


SYSTEM_TOP = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc"})


def bwrap_argv(
    *,
    bwrap: str,
    workspace: Path,
    ctl: Path,
    network: bool,
    hide: Iterable[Path],
    ro_binds: Iterable[Path],
    tmp_size_bytes: int | None,
    rw_binds: Iterable[Path] = (),
    ro_mounts: Iterable[tuple[str, str]] = (),
    info_fd: int | None,
    command: list[str],
) -> list[str]:
    """A bubblewrap command line: read-only host, private /tmp, hidden homes and temp dirs.

    The new root is bubblewrap's own tmpfs. Only the system's own top-level directories
    (``SYSTEM_TOP``: /usr, /etc, /bin, /lib...) are bound back read-only: an allow-list, so
    checkouts, datasets and other copies of hidden files elsewhere on the host (/work, /srv,
    /opt, /var/lib/docker, ...) are simply absent (stops "reading what is hidden" by searching
    the filesystem). /tmp, /run, /root and /home become empty tmpfs mounts. Deeper paths in
    ``hide`` (other temp dirs, the sandboxes' parent, problem data) get an empty tmpfs too;
    ``ro_binds`` (Python, the CUDA toolkit, user extras) are bound back where they are;
    ``rw_binds`` too, writable (the grader's compiler cache, only in a build sandbox that runs
    nothing but the compiler: see :mod:`cudaenv.grading.ccache`). ``ro_mounts`` are
    ``(host, inside)`` pairs bound read-only at another path, inside the fresh /run or /tmp
    (bubblewrap makes their mount points there before /run is remounted read-only): the model
    gateway's socket and forwarder, reached with the network still unshared.
    """
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--new-session", "--as-pid-1", "--cap-drop", "ALL"]
    if not network:
        argv.append("--unshare-net")
    hidden_top = {"tmp", "run", "root", "home"}
    special = {"proc", "dev", "sys", "workspace", "lost+found"}
    for entry in sorted(os.listdir("/")):
        src = "/" + entry
        if entry in hidden_top or entry in special:
            continue
        if os.path.islink(src):
            argv += ["--symlink", os.readlink(src), src]
        elif entry in SYSTEM_TOP:
            argv += ["--ro-bind", src, src]
    argv += ["--ro-bind", "/sys", "/sys", "--dev", "/dev", "--proc", "/proc"]
    for dev in sorted(Path("/dev").glob("nvidia*")):
        argv += ["--dev-bind", str(dev), str(dev)]
    for entry in sorted(hidden_top):
        if entry == "tmp" and tmp_size_bytes:
            argv += ["--size", str(tmp_size_bytes)]
        argv += ["--perms", "1777" if entry == "tmp" else "0755", "--tmpfs", "/" + entry]
    hidden_roots = [Path("/" + e) for e in hidden_top]
    hidden: list[Path] = []
    for path in sorted({Path("/var/tmp"), *(p.resolve() for p in hide)}):
        if path.is_dir() and not _is_under(path, hidden_roots):
            argv += ["--tmpfs", str(path)]
            hidden.append(path)
    for path in sorted({p.resolve() for p in ro_binds}):
        if path.exists():
            argv += ["--ro-bind", str(path), str(path)]
    for path in sorted({p.resolve() for p in rw_binds}):
        if path.is_dir():
            argv += ["--bind", str(path), str(path)]
    # the control FIFOs are only opened inside (a FIFO on a read-only mount is still read and
    # written), never created, renamed or removed: read-only, so no command can swap one for a
    # symlink that the host would then follow (and write a request into a host file)
    argv += ["--bind", str(workspace), INNER_WORKSPACE, "--ro-bind", str(ctl), INNER_CTL]
    for host, inside in ro_mounts:
        argv += ["--ro-bind", host, inside]
    for path in ["/root", "/home", "/run", *map(str, hidden)]:
        argv += ["--remount-ro", path]
    argv += ["--remount-ro", "/", "--chdir", INNER_WORKSPACE]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    return [*argv, "--", *command]
