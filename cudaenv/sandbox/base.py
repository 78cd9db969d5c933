"""The Sandbox contract shared by every backend.

A sandbox owns one workspace directory and runs commands in it. Lifecycle (creation,
``close``) is kept apart from work (``exec``, file access). Every path argument is relative
to the workspace; anything resolving outside it raises :class:`SandboxPathError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024

Isolation = Literal["bubblewrap", "rlimits", "docker"]


class ExecResult(BaseModel):
    """What one command produced. ``exit_code`` is None when it was killed on timeout."""

    model_config = ConfigDict(frozen=True)

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_s: float = 0.0
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


MEMORY_SHARE = 0.75  # of the host's memory, for all sandboxes together
MIN_MEMORY_MB, MAX_MEMORY_MB = 1024, 8192
_workers = 1


def declare_workers(workers: int) -> None:
    """Say how many sandboxes run at once in this process (runners and CLIs call it with
    their worker count): the default memory limit divides the host's memory among them."""
    global _workers
    _workers = max(1, int(workers))


def host_memory_mb() -> int | None:
    """MemTotal from /proc/meminfo, in MiB (None where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_memory_mb(workers: int | None = None, total_mb: int | None = None) -> int:
    """The default memory cap of one sandbox: ``MEMORY_SHARE`` of the host's MemTotal divided
    by the workers running at once, clamped to [MIN_MEMORY_MB, MAX_MEMORY_MB] (8 GB each let
    three busy episodes exhaust a 24 GB host; now they get 6 GB each). The floor keeps small
    hosts usable; with very many workers it can oversubscribe, so pass ``memory_mb`` there."""
    total = total_mb if total_mb is not None else host_memory_mb()
    if total is None:
        return MAX_MEMORY_MB
    share = int(total * MEMORY_SHARE) // max(1, workers or _workers)
    return max(MIN_MEMORY_MB, min(MAX_MEMORY_MB, share))


class SandboxLimits(BaseModel):
    """Resource limits applied to every command a sandbox runs (units in the names)."""

    model_config = ConfigDict(extra="forbid")

    memory_mb: int = Field(
        default_factory=default_memory_mb,
        gt=0,
        description="memory cap (default: default_memory_mb(), from the host and the workers)",
    )
    max_processes: int = Field(default=512, gt=0, description="processes+threads")
    file_size_mb: int = Field(default=1024, gt=0, description="largest file a command may write")
    workspace_mb: int = Field(
        default=1024, gt=0, description="total size of the workspace (where the backend can cap it)"
    )
    open_files: int = Field(default=1024, gt=0)
    cpu_time_s: int = Field(default=600, gt=0, description="CPU seconds per command")
    output_cap_bytes: int = Field(default=DEFAULT_OUTPUT_CAP_BYTES, gt=0, description="per stream")


def cap_output(
    data: bytes, cap: int, *, tail: bytes | None = None, total: int | None = None
) -> tuple[str, bool]:
    """Decode ``data``; if longer than ``cap`` keep head and tail and mark it truncated.

    The one capper of every backend: a capture that kept only a stream's ends in bounded
    memory passes its first bytes as ``data``, its last as ``tail`` and the stream's length
    as ``total`` (each end at least ``cap // 2`` bytes), and gets the same text as if it had
    passed the whole stream.
    """
    size = len(data) if total is None else total
    if size <= cap:
        return data[:size].decode("utf-8", errors="replace"), False
    end = data if tail is None else tail
    half = cap // 2
    head = data[:half].decode("utf-8", errors="replace")
    last = end[len(end) - half :].decode("utf-8", errors="replace")
    return f"{head}\n[... {size - 2 * half} bytes truncated ...]\n{last}", True


class Sandbox(ABC):
    """A workspace plus a way to run commands in it.

    Calling ``close()`` twice is harmless; any other method after ``close()`` raises
    :class:`cudaenv.errors.SandboxClosedError`.
    """

    #: how commands are isolated: "bubblewrap", "rlimits" (no namespaces) or "docker".
    isolation: Isolation
    #: whether commands here can reach a network (False: none at all).
    network: bool = False

    @property
    def output_cap_bytes(self) -> int:
        """How many bytes of each stream ``exec`` keeps (head and tail; see :func:`cap_output`)."""
        return DEFAULT_OUTPUT_CAP_BYTES

    def compile_sibling(self, *, rw_binds: list[str], ro_binds: list[str]) -> Sandbox | None:
        """A new, empty sandbox like this one (same limits and environment) for a compile-only
        build: no network, no GPU where the backend can withhold one (a container), and the
        host directories ``rw_binds`` writable and ``ro_binds`` read-only at the same paths
        inside; or None where this backend (or this configuration of it, e.g. no mount
        isolation) cannot provide one. The caller closes it. The grader mounts the compiler
        cache this way (:mod:`cudaenv.grading.ccache`); whose compiler runs there is
        ``toolchain_id``."""
        return None

    def toolchain_env(self) -> dict[str, str]:
        """Variables that build and test commands need to find the CUDA toolkit here.

        The grader passes them (plus its own) as ``exec(env=...)``. By default the sandbox runs
        the host's toolchain, so this is :func:`cudaenv.toolkit.toolkit_env` (host paths).
        A backend that brings its own toolchain (an image) returns ``{}``: its commands keep
        the environment their image defines.
        """
        from cudaenv.toolkit import toolkit_env

        return dict(toolkit_env())

    @classmethod
    def gpu_access_for(cls, options: Mapping[str, object]) -> bool:
        """What ``gpu_access`` would be for a sandbox made with ``options`` (without making
        one): the host's devices are visible by default."""
        return True

    @classmethod
    def preflight(cls, options: Mapping[str, object]) -> None:
        """Check, before a run starts any work, that sandboxes made with ``options`` can
        start here (a backend's engine answers, its image exists); SandboxError saying what
        is missing. Nothing to check by default."""
        return None

    @property
    def gpu_access(self) -> bool:
        """Whether commands here can reach the host's GPUs (the grader skips GPU stages, as
        "no GPU", where they cannot). A local sandbox shows the host's devices."""
        return True

    def limit_kills(self) -> int | None:
        """How many processes the sandbox's own limits have killed so far (its memory cgroup's
        OOM kills), or None where this backend cannot tell. The grader compares it before and
        after a stage: a SIGKILL the sandbox's limit dealt is the solution's doing, one it did
        not deal came from outside (see :mod:`cudaenv.grading.grader`)."""
        return None

    @property
    def fresh(self) -> bool:
        """Whether nothing has run here yet: the sandbox is new (a pool never lends one
        twice) and no command has run in it. The grader asks when it takes a sandbox from its
        factory, before using it: only a grading whose sandboxes were fresh then writes what
        later gradings trust (the test-outcome cache); one handed a used sandbox still grades,
        uncached. False where a backend cannot tell."""
        return False

    @property
    def toolchain_id(self) -> str:
        """Names the toolchain builds here use (part of the build-cache key): "host" by default."""
        return "host"

    @abstractmethod
    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in the workspace (or ``cwd`` inside it)."""

    @abstractmethod
    def write_file(self, path: str, data: str | bytes) -> None:
        """Create or replace a workspace file, making parent directories."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Return a workspace file's bytes."""

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every regular file in the workspace, as sorted relative POSIX paths."""

    @abstractmethod
    def kill_processes(self) -> None:
        """Kill every process earlier commands left running (background jobs, daemons); the
        workspace stays and the sandbox stays usable. The grader calls it between stages so
        nothing a solution started can outlive its stage (exploit class: a process left by
        the test run that slows the baseline's timed runs or tampers with the benchmark)."""

    def stray_processes(self) -> list[int] | None:
        """Host pids of processes earlier commands left running (none of the sandbox's own
        machinery), or None where this backend cannot tell. The grader asks right after each
        of a solution's runs: anything alive then is a suspected hack, killed before any timed
        run starts (exploit class: a ``setsid`` busy loop that slows the baseline's rounds)."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Kill every process the sandbox started and remove its workspace."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
