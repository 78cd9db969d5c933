"""ccache for grading builds, without letting a solution write the cache.

Why: every solution of a problem compiles the same hidden harness. With ccache and the
``nvcc`` shim (:mod:`cudaenv.grading._nvcc_shim`, one cached compile per source) that object
is compiled once per machine, so a new solution pays only for its own sources.

Why it is safe (exploit class "state kept between episodes to replay results"): a shared
compiler cache that graded code could write would let one solution plant objects that later
gradings link. So the cache directory is writable only in a separate *build* sandbox, and
only when the build command is a single ``nvcc`` invocation with no shell syntax: the only
program that runs there is the compiler, which reads the solution but never executes it. The
test and benchmark stages run in another sandbox, where the cache (under the hidden cudaenv
cache directory) is not even visible. ccache keys an object by the compiler, its options and
the full preprocessed input, so a source cannot claim another source's entry.

The build sandbox is the grading sandbox's compile-only sibling
(``Sandbox.compile_sibling``), with the cache directory mounted writable and the shim's
read-only; a sandbox that cannot make one (no mount isolation) builds without the cache. Its
``toolchain_id`` says whose compiler runs there: the host's (the host's ``ccache``, the shim
run by this Python), or an image's (the image's ``ccache``; the cache is a host directory of
its own, and the shim runs with the image's ``python3`` and finds the image's nvcc and ccache
itself). ``CUDAENV_CCACHE=0`` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from cudaenv.toolkit import cache_dir, cuda_home

SHIM_SOURCE = Path(__file__).with_name("_nvcc_shim.py")
_SHELL_SYNTAX = frozenset(";&|<>()$`\\\n")
CACHE_MAX_SIZE = "4G"


def enabled() -> bool:
    """False when turned off with ``CUDAENV_CCACHE=0``."""
    return os.environ.get("CUDAENV_CCACHE", "1").lower() not in ("0", "false", "no", "off")


@functools.cache
def ccache_binary() -> str | None:
    """The host's ccache executable, or None when it is missing or turned off."""
    if not enabled():
        return None
    found = shutil.which("ccache")
    return str(Path(found).resolve()) if found else None


def real_nvcc() -> str | None:
    home = cuda_home()
    nvcc = home / "bin" / "nvcc" if home else None
    return str(nvcc) if nvcc and nvcc.is_file() else None


def compiler_only(build_command: str) -> bool:
    """True when the build runs nvcc and nothing else: one command, no shell syntax that could
    start another program (globs are fine: bash expands them into file names)."""
    if any(ch in _SHELL_SYNTAX for ch in build_command):
        return False
    try:
        words = shlex.split(build_command)
    except ValueError:
        return False
    return bool(words) and words[0] == "nvcc"


def cache_root() -> Path:
    """The ccache directory (inside cudaenv's cache, hidden from every sandbox)."""
    path = cache_dir() / "ccache"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.cache
def _shim_text(container: bool) -> tuple[str, str]:
    python = "/usr/bin/env python3" if container else f"{os.path.realpath(sys.executable)} -I"
    text = f"#!{python}\n" + SHIM_SOURCE.read_text()
    return text, hashlib.sha256(text.encode()).hexdigest()[:16]


def shim_dir(container: bool = False) -> Path:
    """A directory holding ``nvcc`` = the shim, run by this Python, or for a container by the
    image's ``python3`` (host-written, bound read-only into the build sandbox; named by
    content so an upgrade never reuses a stale one)."""
    text, digest = _shim_text(container)
    path = cache_dir() / "ccache-shim" / digest
    target = path / "nvcc"
    if not target.is_file():
        tmp = path.with_name(f"{digest}.{os.getpid()}.{secrets.token_hex(4)}.tmp")  # per thread
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "nvcc").write_text(text)
        (tmp / "nvcc").chmod(0o755)
        try:
            tmp.rename(path)
        except OSError:  # another process got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def build_env(base: dict[str, str], cached: list[str]) -> dict[str, str] | None:
    """The build command's environment with the shim first on PATH, or None when unusable.
    ``cached``: the sources worth caching (the problem's own, shared by all its solutions)."""
    ccache, nvcc = ccache_binary(), real_nvcc()
    if ccache is None or nvcc is None:
        return None
    env = dict(base)
    path = env.get("PATH") or os.environ.get("PATH", "/usr/bin:/bin")
    env |= {
        "PATH": f"{shim_dir()}:{path}",
        "CUDAENV_REAL_NVCC": nvcc,
        "CUDAENV_CCACHE_BIN": ccache,
        "CUDAENV_NVCC_CACHED": " ".join(p for p in cached if " " not in p),
        "CCACHE_DIR": str(cache_root()),
        "CCACHE_MAXSIZE": CACHE_MAX_SIZE,
        "CCACHE_TEMPDIR": "/tmp",
    }
    return env


def container_cache_root() -> Path:
    """The ccache directory for builds with an image's toolchain: the image's ccache may
    differ from the host's, so it is not the host builds' directory (the sibling that mounts
    it makes it writable for its own user)."""
    path = cache_dir() / "ccache-container"
    path.mkdir(parents=True, exist_ok=True)
    return path


def container_build(command: str, base: dict[str, str], cached: list[str]) -> tuple[str, dict]:
    """The build command and environment for a build container: the image keeps its own
    PATH (unknown here), so the shim's directory is put first by the command itself, and the
    shim finds the image's nvcc and ccache on that PATH."""
    env = dict(base) | {
        "CUDAENV_NVCC_CACHED": " ".join(p for p in cached if " " not in p),
        "CCACHE_DIR": str(container_cache_root()),
        "CCACHE_MAXSIZE": CACHE_MAX_SIZE,
        "CCACHE_TEMPDIR": "/tmp",
    }
    return f'PATH={shlex.quote(str(shim_dir(container=True)))}:"$PATH" {command}', env


def seen_before(problem_hash: str) -> bool:
    """Whether a solution of this problem was built here before (and mark it built).

    The first build of a problem skips the cache: a ccache miss costs an extra preprocessor
    run, and a problem graded once (a cold pass over a suite) never gains from it. From the
    second distinct solution on (an RL run's samples) the harness object is cached and reused.
    The marks live outside the cache directory, so a build cannot write them.
    """
    mark = cache_dir() / "ccache-problems" / problem_hash
    if mark.exists():
        return True
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return False


@dataclass(frozen=True)
class CachedCompile:
    """How to run a compiler-only build through the cache: the command and environment, and
    the host directories its sandbox mounts (the cache writable, the shim read-only)."""

    command: str
    env: dict[str, str]
    rw_binds: list[str]
    ro_binds: list[str]


def for_build(
    command: str, base: dict[str, str], cached: list[str], *, host: bool
) -> CachedCompile | None:
    """The cached form of ``command`` (which :func:`compiler_only` accepted) for a build with
    the host's toolchain (``host``) or an image's; None when the cache is off or unusable."""
    if not enabled():
        return None
    if not host:
        cmd, env = container_build(command, base, cached)
        return CachedCompile(
            cmd, env, [str(container_cache_root())], [str(shim_dir(container=True))]
        )
    env = build_env(base, cached)
    if env is None:
        return None
    return CachedCompile(command, env, [str(cache_root())], [str(shim_dir())])


def stats(root: Path | None = None) -> dict[str, int]:
    """ccache's hit and miss counters for the grader's cache (for tests and benchmarks)."""
    import subprocess

    ccache = ccache_binary()
    if ccache is None:
        return {}
    out = subprocess.run(
        [ccache, "--print-stats"],
        env={**os.environ, "CCACHE_DIR": str(root or cache_root())},
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    counters = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    keys = ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")
    return {k: int(counters.get(k, 0)) for k in keys}
