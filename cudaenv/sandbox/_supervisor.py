"""Pieces of the local sandbox that are not the Sandbox API itself.

* ``SUPERVISOR``: the bash script that runs, once per sandbox, inside the namespace. Bash, not
  Python: an idle bash costs ~0.2 MB of private memory against 2.5-4 MB for ``python -I -S``,
  which matters with a hundred sandboxes open. It only forks; the host reads the output (from
  per-command FIFOs), enforces timeouts and caps, so the script stays a dozen lines.
* ``bwrap_argv``: the bubblewrap command line (what is visible, what is writable).
* ``CgroupSet``: optional per-sandbox pids/memory cgroups, when the host lets us write them.
* ``Capture`` (head and tail of a stream in bounded memory) and ``Slot`` (host-side state of a
  worker slot), plus small process and directory helpers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudaenv.sandbox.base import cap_output

#: Where the workspace and the control directory appear inside a bubblewrap sandbox.
INNER_WORKSPACE = "/workspace"
INNER_CTL = "/run/cudaenv"

# Started as ``bash -c SUPERVISOR supervisor CTL_DIR ULIMIT_ARGS BASH``. The main loop
# evaluates one line at a time from stdin: ``_slot K`` starts worker slot K, ``kill ...`` ends a
# timed-out command. A slot is a reporter that loops: fork, with set -m, a runner in its own
# process group (a timeout kills that group; ``kill 0`` cannot reach the reporter), wait for it,
# write "r CODE". The runner waits on the FIFO CTL/K.w for a request ``_job SEQ CWD CMD
# [NAME=VALUE...]``, writes "j SEQ PGID" (command SEQ taken), sends its output to the FIFOs
# CTL/SEQ.o and CTL/SEQ.e the host already reads, applies the rlimits and execs ``bash -c CMD``:
# one fork per command, made before the command arrives.
#
# Status lines go to the FIFO CTL/K.s, which the host reads. The supervisor opens it, writes "s"
# and only then forks the reporter, which inherits it: under bubblewrap the supervisor is PID 1,
# which ``kill -9 -1`` cannot reach, so from the moment the host reads "s" the FIFO has a writer
# that only the reporter's death can take away, and its end of file means the slot is dead
# (a reporter killed before it could say anything is no longer mistaken for one still starting).
# The runner closes its copy first thing and opens the FIFO again only to write "j": a runner
# whose reporter was killed cannot keep a dead slot looking alive. "j" also tells the host
# whether its command started at all (a slot killed before "j" is retried elsewhere; after,
# never: a command runs at most once), and which "r" is its own (the first after it).
# On stdin EOF (the owner died) bash exits; under bubblewrap it is PID 1, so the kernel then
# kills every process of the sandbox.
SUPERVISOR = r"""
exec 2>/dev/null
_ctl=$1 _lim=$2 _bash=$3
_job() {
  echo "j $1 $BASHPID" >"$_ctl/$_k.s"
  local cwd=$2 cmd=$3 kv
  exec >"$_ctl/$1.o" 2>"$_ctl/$1.e" || exit 126
  shift 3
  ulimit $_lim || echo "cudaenv: could not apply limits: $_lim" >&2
  for kv; do export "$kv"; done
  cd -- "$cwd" || exit 1
  exec "$_bash" -c "$cmd"
}
_slot() {
  exec 9<>"$_ctl/$1.s" || return
  echo s >&9
  (
    _k=$1
    exec >/dev/null
    set -m
    while :; do
      ( exec 9>&-; IFS= read -r -d '' _req <"$_ctl/$_k.w"; exec </dev/null; eval "$_req" ) &
      wait $!
      echo "r $?" >&9
    done
  ) &
  exec 9>&-
}
while IFS= read -r _line; do eval "$_line"; done
"""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


_UNSAFE = re.compile(rb"[\x00-\x1f'\\\x7f]")


def quote(value: str) -> bytes:
    """Bash ANSI-C quoting (``$'...'``), byte-exact and newline-free."""
    raw = value.encode("utf-8", "surrogateescape")
    if b"\0" in raw:
        raise ValueError("commands, paths and environment values cannot contain NUL bytes")
    return b"$'" + _UNSAFE.sub(lambda m: b"\\x%02x" % m[0][0], raw) + b"'"


def job_request(seq: int, cwd: str, command: str, env: Mapping[str, str]) -> bytes:
    """What a runner evaluates to run ``command`` (written to its FIFO)."""
    words = [b"_job", str(seq).encode(), quote(cwd), quote(command)]
    for name, value in env.items():
        if not _NAME.match(name):
            raise ValueError(f"invalid environment variable name {name!r}")
        words.append(quote(f"{name}={value}"))
    return b" ".join(words)


def _is_under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


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
    nothing but the compiler: see :mod:`cudaenv.grading.ccache`).
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
    for path in ["/root", "/home", "/run", *map(str, hidden)]:
        argv += ["--remount-ro", path]
    argv += ["--remount-ro", "/", "--chdir", INNER_WORKSPACE]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    return [*argv, "--", *command]


class CgroupSet:
    """Per-sandbox cgroups (v1 ``pids`` and ``memory``, or v2), created under our own cgroup.

    Where they can be written (root in a container, a delegated subtree) they give a real
    process cap (RLIMIT_NPROC does not bind root, and counts per user elsewhere) and a memory cap
    for the whole sandbox, and let ``kill_all`` find every process, even those that left the
    process tree. Where they cannot, ``dirs`` is empty and rlimits alone apply.
    """

    def __init__(self, name: str, *, max_processes: int, memory_mb: int) -> None:
        self.dirs: list[Path] = []
        self.pids_limited = False
        self.memory_limited = False
        for base, files in cgroup_bases():
            path = base / name
            try:
                path.mkdir()
            except OSError:
                continue
            ok = True
            for key, value in files(max_processes, memory_mb).items():
                try:
                    (path / key).write_text(value)
                except OSError:
                    ok = False
            if not ok or not (path / "cgroup.procs").exists():
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.dirs.append(path)
            self.pids_limited |= any(k.startswith("pids") for k in files(1, 1))
            self.memory_limited |= any(k.startswith("memory") for k in files(1, 1))

    def add(self, pid: int) -> None:
        """Move ``pid`` (before it forks anything) into every cgroup of the set."""
        for path in self.dirs:
            with contextlib.suppress(OSError):
                (path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        return cgroup_pids(self.dirs)

    def oom_kills(self) -> int | None:
        """Processes the memory cgroup's limit killed (v1 ``memory.oom_control``, v2
        ``memory.events``: ``oom_kill N``); None without a memory cgroup."""
        if not self.memory_limited:
            return None
        total = 0
        for path in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError, ValueError):
                    for line in (path / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            total += int(value)
        return total

    def kill_all(self, deadline_s: float = 5.0) -> None:
        """SIGKILL every member until none is left (a fork bomb is bounded by pids.max)."""
        kill_cgroups(self.dirs, deadline_s)

    def remove(self) -> None:
        remove_cgroups(self.dirs)
        self.dirs = []


def cgroup_pids(dirs: list[Path]) -> set[int]:
    """The pids in the cgroups ``dirs`` (unreadable ones count as empty)."""
    found: set[int] = set()
    for path in dirs:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(x) for x in (path / "cgroup.procs").read_text().split())
    return found


def kill_cgroups(dirs: list[Path], deadline_s: float = 5.0) -> None:
    """SIGKILL every process in the cgroups ``dirs`` until none is left or ``deadline_s``
    passed (v2's ``cgroup.kill`` first; processes in their own sessions leave no tree)."""
    end = time.monotonic() + deadline_s
    while dirs and time.monotonic() < end:
        for path in dirs:
            kill_file = path / "cgroup.kill"
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
        pids = cgroup_pids(dirs)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def remove_cgroups(dirs: list[Path]) -> None:
    """Remove the cgroups ``dirs``, retrying while a killed member still holds one (it leaves
    its cgroup a moment after it dies); a cgroup already gone is fine."""
    for path in dirs:
        for _ in range(200):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)


def _v1_files(controller: str):  # type: ignore[no-untyped-def]
    def files(max_processes: int, memory_mb: int) -> dict[str, str]:
        if controller == "pids":
            return {"pids.max": str(max_processes)}
        return {"memory.limit_in_bytes": str(memory_mb * 1024 * 1024)}

    return files


def _v2_files(max_processes: int, memory_mb: int) -> dict[str, str]:
    return {"pids.max": str(max_processes), "memory.max": str(memory_mb * 1024 * 1024)}


def cgroup_bases():  # type: ignore[no-untyped-def]
    """(directory to create sandbox cgroups in, limit files) for each usable hierarchy."""
    root = Path("/sys/fs/cgroup")
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    own: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            own[c] = path.lstrip("/")
    bases = []
    if (root / "cgroup.controllers").exists():  # pure v2
        base = root / own.get("", "")
        enabled = (base / "cgroup.subtree_control").read_text() if base.is_dir() else ""
        if "pids" in enabled.split() and os.access(base, os.W_OK):
            bases.append((base, _v2_files))
        return bases
    for controller in ("pids", "memory"):
        base = root / controller / own.get(controller, "")
        if controller in own and base.is_dir() and os.access(base, os.W_OK):
            bases.append((base, _v1_files(controller)))
    return bases


def kill_marked(marker: str, rounds: int = 20) -> None:
    """SIGKILL every process whose environment holds ``marker`` (the no-cgroup rlimits path)."""
    needle = marker.encode() + b"\0"
    me = os.getpid()
    for _ in range(rounds):
        hits = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if needle in fh.read() + b"\0":
                        hits.append(int(entry))
            except OSError:
                continue
        if not hits:
            return
        for pid in hits:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def python_prefixes() -> list[Path]:
    """Directories that make this Python interpreter work (kept visible inside the sandbox)."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    paths.add(Path(os.path.realpath(sys.executable)).parent.parent)
    return sorted(paths)


def rmtree(path: Path) -> None:
    """Remove a tree even where the agent made directories unwritable."""

    def fix(func, p, exc):  # type: ignore[no-untyped-def]
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)

    if path.exists():
        shutil.rmtree(path, onerror=fix)


class Capture:
    """Keeps the first and last ``cap`` bytes of a stream: bounded memory for any output size."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
        if len(data) >= self.cap:
            self.tail = bytearray(data[-self.cap :])
        else:
            self.tail += data
            if len(self.tail) > self.cap:
                del self.tail[: len(self.tail) - self.cap]

    def text(self) -> tuple[str, bool]:
        """The same text ``cap_output`` gives for the whole stream."""
        return cap_output(bytes(self.head), self.cap, tail=bytes(self.tail), total=self.total)


@dataclass
class Slot:
    """Host-side state of a worker slot, from the status lines of its FIFO (see ``SUPERVISOR``).

    ``announced``: "s" came, so end of file on the FIFO means the reporter died (``dead``).
    ``job``/``pgid``: the command the slot's runner took ("j SEQ PGID") and the process group
    it runs in, until the "r" that follows.
    """

    key: int
    status_fd: int
    buffer: bytearray = field(default_factory=bytearray)
    announced: bool = False
    job: int | None = None
    pgid: int | None = None
    dead: bool = False

    def parse(self, data: bytes) -> int | None:
        """Take status bytes; the exit code if the runner that took ``job`` ended ("r")."""
        self.buffer += data
        *lines, rest = bytes(self.buffer).split(b"\n")
        self.buffer = bytearray(rest)
        code = None
        for line in lines:
            kind, *values = line.split(b" ")
            if kind == b"s":
                self.announced = True
            elif kind == b"j" and len(values) == 2 and all(v.isdigit() for v in values):
                self.job, self.pgid = int(values[0]), int(values[1])
            elif kind == b"r" and len(values) == 1 and values[0].isdigit():
                # an "r" without a "j" before it: a runner that died idle (``kill -9 -1``)
                if self.job is not None and code is None:
                    code = int(values[0])
                self.job = self.pgid = None
        return code
