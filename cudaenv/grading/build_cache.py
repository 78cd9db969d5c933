"""Content-addressed cache of builds: grading the same files twice compiles once.

The key covers everything that goes into a build: every file (path and content), the build
command, the problem type, the host toolkit's version and the sandbox's toolchain
(``Sandbox.toolchain_id``: "host", or the image a docker sandbox runs). What is cached is the build's result and
every file the build created (the binaries), restored into the next fresh workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shlex
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel

from cudaenv.grading.cache_files import remove_tree, temp_dir_beside, warn_failed
from cudaenv.grading.static_cpp import kept_outputs
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.model import SourceFile
from cudaenv.sandbox.base import Sandbox
from cudaenv.toolkit import cache_dir, toolkit_version

MAX_ARTIFACT_BYTES = 512 << 20


def make_executable(sandbox: Sandbox, paths: list[str]) -> None:
    if paths:
        sandbox.exec("chmod +x -- " + " ".join(shlex.quote(a) for a in paths), timeout=30)


def copy_outputs(src: Sandbox, dst: Sandbox, inputs: set[str]) -> list[str]:
    """Move what a build created in ``src`` (every file not among ``inputs``) into ``dst``."""
    outputs = [rel for rel in src.list_files() if rel not in inputs]
    for rel in outputs:
        dst.write_file(rel, src.read_file(rel))
    make_executable(dst, outputs)
    return outputs


class CachedBuild(BaseModel):
    result: StageResult
    artifacts: list[str]


def build_key(
    files: Iterable[SourceFile], build_command: str, problem_type: str, toolchain: str = "host"
) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        h.update(f.path.encode() + b"\0" + hashlib.sha256(f.content.encode()).digest())
    h.update(json.dumps([build_command, problem_type, toolkit_version(), toolchain]).encode())
    return h.hexdigest()


class BuildCache:
    """Builds on disk under ``<cache>/builds/<key>/``; safe across processes (file locks)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "builds"
        self.root.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the key's file lock (one build per key at a time); where the lock file cannot
        be made (a full disk) build unlocked: a duplicate build beats a lost verdict."""
        lock = FileLock(str(self.root / f"{key}.lock"))
        try:
            lock.acquire()
        except OSError as exc:
            warn_failed("build lock", self.root / f"{key}.lock", exc)
            yield
            return
        try:
            yield
        finally:
            lock.release()

    def get(self, key: str) -> CachedBuild | None:
        meta = self.root / key / "build.json"
        if not meta.is_file():
            return None
        try:
            return CachedBuild.model_validate_json(meta.read_text())
        except ValueError:
            return None

    def restore(self, key: str, entry: CachedBuild, sandbox: Sandbox) -> None:
        """Write the cached binaries into a fresh workspace, executable."""
        base = self.root / key / "files"
        for rel in entry.artifacts:
            sandbox.write_file(rel, (base / rel).read_bytes())
        make_executable(sandbox, entry.artifacts)

    def put(self, key: str, result: StageResult, sandbox: Sandbox, inputs: set[str]) -> None:
        """Store the build result and every new file the build produced (only if it succeeded).

        Filled in a uniquely named directory and renamed into place; a failed write (a full
        disk) warns and costs only the cache, never the build it would have stored.
        """
        if result.status != "ok":
            return
        target = self.root / key
        tmp: Path | None = None
        try:
            tmp = temp_dir_beside(target)
            artifacts: list[str] = []
            total = 0
            listing = sandbox.list_files()
            kept = kept_outputs(listing)  # nvcc -keep's intermediates: the toolchain check's
            for rel in listing:
                if rel in inputs or rel in kept:
                    continue
                data = sandbox.read_file(rel)
                total += len(data)
                if total > MAX_ARTIFACT_BYTES:
                    return
                dest = tmp / "files" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                artifacts.append(rel)
            (tmp / "build.json").write_text(
                CachedBuild(result=result, artifacts=artifacts).model_dump_json()
            )
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
            tmp = None
        except OSError as exc:
            warn_failed("build", target, exc)
        finally:
            remove_tree(tmp)
