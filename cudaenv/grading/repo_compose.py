"""What a repository task grades, composed on the host: the base commit, the agent's diff
with its protected paths reset, then the held-out test patch.

Why on the host, in a private git index: nothing of the agent's runs here, and the result is
one patch from the base (modes, symlinks, deletions and binary files included) that the
grading sandbox applies to a clean checkout, plus the expected content of every protected
path, which the grader compares with the workspace after each step.

The rules (a :class:`~cudaenv.problems.repo_model.RepoPolicy`): a path the agent changed is
reset to its base version (an added one removed) when it is a file of the test patch, matches
a protected glob (test directories, test-runner configuration, CI configuration), lies in the
build directory, or is a build-system file the policy does not keep; a change to the test
sections of ``setup.cfg`` / ``pyproject.toml`` restores that file. Each reset path is reported
with its reason.
"""

from __future__ import annotations

import configparser
import io
import subprocess
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaenv.errors import CudaEnvError
from cudaenv.problems.model import Solution, SourceFile
from cudaenv.problems.repo_base import BaseTree, Staging
from cudaenv.problems.repo_model import RepoSpec, patch_paths

RUNNER_FILES = ("setup.cfg", "pyproject.toml")
SKIP_MODES = ("120000", "160000")  # symlinks and submodules: no file content to compare


class PatchRejected(CudaEnvError, ValueError):
    """The agent's diff cannot be graded (too large, or it does not apply to the base)."""


@dataclass
class Composed:
    """The graded tree as a patch from the base, and what was kept and reset of the agent's."""

    patch: bytes
    changes: bytes = b""  # a tar of every path the graded tree adds or changes
    deleted: list[str] = field(default_factory=list)  # paths the graded tree removes
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    build_files: list[str] = field(default_factory=list)
    expected: dict[str, tuple[str, str]] = field(default_factory=dict)


def solution_parts(files: Any) -> tuple[bytes | None, list[SourceFile]]:
    """A solution as (patch, whole files): a ``patch`` Solution, patch text (str or bytes), or
    whole files (a ``file`` Solution, a {path: text} mapping, SourceFiles)."""
    if isinstance(files, Solution):
        if files.type == "patch":
            return (files.patch or "").encode("utf-8", "surrogateescape"), []
        return None, list(files.files)
    if isinstance(files, bytes):
        return files, []
    if isinstance(files, str):
        return files.encode("utf-8", "surrogateescape"), []
    if isinstance(files, Mapping):
        return None, [SourceFile(path=k, content=v) for k, v in files.items()]
    return None, list(files) if isinstance(files, Iterable) else []


def _sections(path: str, data: bytes, names: list[str]) -> dict[str, Any] | None:
    """The test-runner sections of a setup.cfg / pyproject.toml (None: unreadable)."""
    try:
        text = data.decode("utf-8")
        if path.endswith(".toml"):
            doc: Any = tomllib.loads(text)
            out: dict[str, Any] = {}
            for name in names:
                node = doc
                for part in name.split("."):
                    node = node.get(part) if isinstance(node, dict) else None
                out[name] = node
            return out
        cfg = configparser.ConfigParser(interpolation=None)
        cfg.read_string(text)
        return {n: dict(cfg[n]) if cfg.has_section(n) else None for n in names}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error):
        return None


def compose(spec: RepoSpec, base: BaseTree, solution: Any, *, test_patch: bool = True) -> Composed:
    """The graded tree (see the module docstring); PatchRejected for a diff that cannot be
    graded, SpecError when the task's own test patch does not apply. ``test_patch=False``
    leaves the test patch out (the release gate's pass-to-pass run on the parent)."""
    patch, whole = solution_parts(solution)
    limit = spec.policy.max_patch_bytes
    size = len(patch or b"") + sum(len(f.content.encode("utf-8", "surrogateescape")) for f in whole)
    if size > limit:
        raise PatchRejected(f"the diff is {size} bytes, over the task's limit of {limit}")
    base_files = base.ls_tree()
    with tempfile.TemporaryDirectory(prefix="cudaenv-compose-") as tmp:
        stage = Staging(base, Path(tmp))
        if patch and patch.strip():
            _apply(stage, patch, base_files, Path(tmp))
        for f in whole:
            mode = base_files.get(f.path, ("100644", ""))[0]
            stage.put(
                f.path,
                f.content.encode("utf-8", "surrogateescape"),
                "100644" if mode in SKIP_MODES else mode,
            )
        out = Composed(patch=b"")
        reset: list[str] = []
        for status, path in stage.changed():
            why = spec.protected_rule(path)
            if why is None and path.rsplit("/", 1)[-1] in RUNNER_FILES and status == "M":
                names = spec.policy.runner_sections
                entries = stage.entries()
                new = (
                    _sections(path, stage.blob(entries[path][1]), names)
                    if path in entries
                    else None
                )
                old = _sections(path, stage.blob(base_files[path][1]), names)
                if new != old:
                    why = "changes a test-runner section"
            if why is not None:
                reset.append(path)
                out.dropped.append(f"{path}: {why}")
                continue
            out.kept.append(path)
            if spec.is_build_file(path):
                out.build_files.append(path)
        stage.restore(reset, base_files)
        held_out = spec.test_patch.encode("utf-8", "surrogateescape") if test_patch else b""
        res = stage.apply(held_out, check=False) if held_out else None
        if (
            res is not None and res.returncode != 0
        ):  # its paths are protected, so the base version is there
            from cudaenv.errors import SpecError

            raise SpecError(
                f"test_patch does not apply: {res.stderr.decode(errors='replace')[:400]}",
                field="test_patch",
            )
        out.patch = stage.diff()
        out.changes, out.deleted = _changes(stage)
        out.expected = {
            p: entry
            for p, entry in stage.entries().items()
            if entry[0] not in SKIP_MODES
            and spec.protected_rule(p) is not None
            and not p.startswith(spec.build_dir + "/")
        }
    return out


def _apply(stage: Staging, patch: bytes, base_files: dict[str, tuple[str, str]], tmp: Path) -> None:
    """Apply the agent's diff as SWE-bench's harness does: ``git apply``, then with hunk
    line counts recounted, then GNU ``patch`` with fuzz on the files it names; PatchRejected
    when none applies."""
    res = stage.apply(patch, check=False)
    if res.returncode == 0:
        return
    why = res.stderr.decode(errors="replace").strip()[:600]
    args = ["apply", "--cached", "--binary", "--recount", "--whitespace=nowarn", "-"]
    if stage.git(args, data=patch, check=False).returncode == 0:
        return
    work = tmp / "fuzz"
    touched = [p for p in patch_paths(patch.decode("utf-8", "replace")) if "\0" not in p]
    for path in touched:
        if path in base_files and base_files[path][0] not in SKIP_MODES:
            dest = work / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(stage.blob(base_files[path][1]))
    work.mkdir(exist_ok=True)
    cmd = ["patch", "-p1", "--force", "--fuzz=3", "--no-backup-if-mismatch"]
    try:
        done = subprocess.run(cmd, cwd=work, input=patch, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PatchRejected(f"the diff does not apply to the base commit: {why}") from exc
    if done.returncode != 0:
        raise PatchRejected(f"the diff does not apply to the base commit: {why}")
    for path in touched:
        dest = work / path
        if dest.is_file() and not dest.is_symlink():
            mode = base_files.get(path, ("100644", ""))[0]
            stage.put(path, dest.read_bytes(), "100755" if mode == "100755" else "100644")
        elif path in base_files:
            stage.remove(path)


def _changes(stage: Staging) -> tuple[bytes, list[str]]:
    """The graded tree's difference from the base as a tar (modes and symlinks kept, every
    member dated now, so a build tree made from the base rebuilds what it touches) and the
    list of removed paths: what a sandbox holding the base checkout needs, with tar alone."""
    entries = stage.entries()
    buf = io.BytesIO()
    deleted: list[str] = []
    now = time.time()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for status, path in stage.changed():
            if status == "D" or path not in entries:
                deleted.append(path)
                continue
            mode, blob = entries[path]
            data = stage.blob(blob)
            info = tarfile.TarInfo(path)
            info.mtime = now
            if mode == "120000":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode("utf-8", "surrogateescape")
                tar.addfile(info)
            elif mode == "160000":
                continue  # a submodule pointer: nothing to unpack
            else:
                info.mode = 0o755 if mode == "100755" else 0o644
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), deleted


__all__ = ["Composed", "PatchRejected", "compose", "solution_parts"]
