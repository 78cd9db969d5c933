"""What repository grading does inside a sandbox, with the Sandbox contract only (exec, files):
unpack archives, learn where the workspace is, run one step, pack a directory back out, and
compare the protected paths with what the problem says they hold.

Why tar and not git inside the sandbox: after the agent's diff and a build have run there,
nothing in the sandbox (its ``.git`` included) is trusted to answer; the host reads the files
and compares them itself.
"""

from __future__ import annotations

import secrets
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cudaenv.errors import SandboxError
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.repo_base import blob_id
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.sandbox.base import ExecResult, Sandbox

TAIL_CHARS = 4000
#: paths a step may create under protected globs without it counting as a change
SCRATCH_PARTS = ("__pycache__", ".pytest_cache")
SCRATCH_SUFFIXES = (".pyc", ".pyo")
GRADER_PREFIX = ".cudaenv"


@dataclass(frozen=True)
class Probe:
    """Where the workspace is inside the sandbox, its PATH, and the tools found there."""

    inner: str
    path: str
    ccache: bool
    cmake: bool


def probe(box: Sandbox) -> Probe:
    res = box.exec(
        'pwd; printf "%s\\n" "$PATH"; command -v ccache >/dev/null && echo ccache; '
        "command -v cmake >/dev/null && echo cmake; true",
        timeout=60,
    )
    lines = res.stdout.splitlines()
    if len(lines) < 2:
        raise SandboxError(f"cannot probe the sandbox: {res.stderr[-300:]}")
    return Probe(
        inner=lines[0], path=lines[1], ccache="ccache" in lines[2:], cmake="cmake" in lines[2:]
    )


def unpack(
    box: Sandbox, data: bytes, *, deleted: list[str] | None = None, touch: bool = False
) -> None:
    """Remove ``deleted`` paths, then unpack the tar ``data`` into the workspace (modes kept;
    times too, unless ``touch``: then every file is dated now, newer than any build output)."""
    name = f"{GRADER_PREFIX}-unpack-{secrets.token_hex(4)}.tar"
    cmds = []
    if deleted:
        listing = f"{GRADER_PREFIX}-deleted-{secrets.token_hex(4)}"
        box.write_file(listing, b"\0".join(p.encode("utf-8", "surrogateescape") for p in deleted))
        cmds.append(f"xargs -0 rm -rf -- < {listing} && rm -f {listing}")
    box.write_file(name, data)
    flags = "-xpmf" if touch else "-xpf"
    cmds.append(f"tar --no-same-owner {flags} {name} && rm -f {name}")
    res = box.exec(" && ".join(cmds), timeout=900)
    if not res.ok:
        raise SandboxError(
            f"unpacking into the sandbox failed: {(res.stderr or res.stdout)[-500:]}"
        )


def pack(box: Sandbox, paths: list[str]) -> bytes:
    """A tar of ``paths`` (workspace-relative) as the sandbox holds them."""
    name = f"{GRADER_PREFIX}-pack-{secrets.token_hex(4)}.tar"
    quoted = " ".join(shlex.quote(p) for p in paths)
    # POSIX format: sub-second modification times, which ninja and make compare
    res = box.exec(f"tar --format=posix -cf {name} --exclude={name} -- {quoted}", timeout=900)
    if not res.ok:
        raise SandboxError(f"packing {paths} failed: {(res.stderr or res.stdout)[-500:]}")
    try:
        return box.read_file(name)
    finally:
        box.exec(f"rm -f {name}", timeout=60)


def output(result: ExecResult, limit: int = TAIL_CHARS) -> str:
    text = result.stdout
    if result.stderr:
        text = f"{text}\n[stderr]\n{result.stderr}" if text else result.stderr
    return text[-limit:]


def step(
    box: Sandbox, command: str, *, timeout: float, env: Mapping[str, str] | None = None
) -> tuple[StageResult, ExecResult]:
    """Run one grading step; ok when it exits 0 in time."""
    started = time.perf_counter()
    res = box.exec(command, timeout=timeout, env=dict(env or {}))
    seconds = round(time.perf_counter() - started, 3)
    if res.timed_out:
        status, reason = "timeout", f"timed out after {timeout:.0f}s"
    elif res.exit_code == 0:
        status, reason = "ok", None
    else:
        status, reason = "failed", f"exit code {res.exit_code}"
    stage = StageResult(
        status=status,
        exit_code=res.exit_code,
        seconds=seconds,
        output_tail=output(res),
        reason=reason,
    )
    return stage, res


def scratch(path: str) -> bool:
    parts = path.split("/")
    return any(p in SCRATCH_PARTS for p in parts) or path.endswith(SCRATCH_SUFFIXES)


def changed_protected(
    box: Sandbox, spec: RepoSpec, expected: Mapping[str, tuple[str, str]]
) -> list[str]:
    """Protected paths whose workspace content is not what the problem says (rewritten,
    removed, or added under a protected glob), compared on the host."""
    found = []
    present = set()
    for path in box.list_files():
        if path.startswith((GRADER_PREFIX, spec.build_dir + "/", ".git/")) or scratch(path):
            continue
        if path in expected:
            present.add(path)
        elif spec.protected_rule(path) is not None:
            found.append(f"{path} was added")
    for path, (_mode, blob) in expected.items():
        if path not in present:
            found.append(f"{path} is missing")
            continue
        try:
            data = box.read_file(path)
        except OSError:
            found.append(f"{path} cannot be read")
            continue
        if blob_id(data) != blob:
            found.append(f"{path} was rewritten")
    return sorted(found)


def host_dir(path: Path) -> str:
    return str(path.resolve())


__all__ = ["Probe", "changed_protected", "pack", "probe", "scratch", "step", "unpack"]
