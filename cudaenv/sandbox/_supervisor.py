"""The local sandbox's supervisor: the script inside, and the host's side of its protocol.

* ``SUPERVISOR``: the bash script that runs, once per sandbox, inside the namespace. Bash, not
  Python: an idle bash costs ~0.2 MB of private memory against 2.5-4 MB for ``python -I -S``,
  which matters with a hundred sandboxes open. It only forks; the host reads the output (from
  per-command FIFOs), enforces timeouts and caps, so the script stays a dozen lines.
* ``job_request`` (what a runner evaluates), ``Slot`` (host-side state of a worker slot, from
  its status lines) and ``Capture`` (head and tail of a stream in bounded memory): what the
  slot client (``_slots``) speaks.
* ``kill_marked`` and ``rmtree``: cleanup where no namespace or cgroup does it.

The bubblewrap command line is ``_bwrap_argv``, the cgroups ``_cgroups``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudaenv.sandbox._signals import kill
from cudaenv.sandbox.base import cap_output

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
                kill(pid, signal.SIGKILL)
        time.sleep(0.005)


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
