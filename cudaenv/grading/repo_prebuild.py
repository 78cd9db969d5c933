"""The pre-built build tree of a repository task: the base commit configured and its targets
built once per task and toolchain, then unpacked into every episode's and every grading's
workspace, so a fix costs only what it rebuilds.

Why it can be shared: only the base commit's own code runs to make it (its configure and
build, no test patch, no agent), in a sandbox made like the grader's. The archive is stored in
cudaenv's cache (hidden from every sandbox) with the workspace path the build saw: CMake trees
hold absolute paths, so a sandbox whose workspace sits elsewhere (rlimits-only isolation)
configures and builds from scratch instead. The build runs through ccache (CMake's compiler
launcher) where the sandbox has it, in a compile-only sibling that alone can write the cache.
Its configure and build results are kept: they are the release gate's first transition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from cudaenv.grading.repo_sandbox import Probe, pack, probe, step, unpack
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.repo_base import BaseTree
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.sandbox.base import Sandbox
from cudaenv.toolkit import cache_dir

SandboxFactory = Callable[[], Sandbox]
REPO_CCACHE_MAX_SIZE = "8G"


@dataclass(frozen=True)
class Prebuilt:
    """One task's base build: where it was made, how configure and build went, its archive."""

    root: Path
    inner: str
    configure: StageResult
    build: StageResult

    @property
    def ok(self) -> bool:
        return self.configure.status in ("ok", "skipped") and self.build.status in ("ok", "skipped")

    @property
    def archive(self) -> Path:
        return self.root / "build.tar"

    def usable_in(self, where: Probe) -> bool:
        """Whether its absolute paths hold in a sandbox whose workspace is ``where.inner``."""
        return self.ok and where.inner == self.inner and self.archive.is_file()


def ccache_dir(toolchain: str) -> Path:
    """The compiler cache of repository builds with ``toolchain`` (host dir, never visible to
    a sandbox that runs anything but a build of trusted build files)."""
    path = cache_dir() / "ccache-repo" / hashlib.sha256(toolchain.encode()).hexdigest()[:12]
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_env(where: Probe, cache: Path | None) -> dict[str, str]:
    """Configure and build variables: ccache as CMake's compiler launcher where the sandbox
    has it (used for real only with ``cache``, the writable cache dir, else disabled)."""
    if not where.ccache:
        return {}
    env = {
        "CMAKE_C_COMPILER_LAUNCHER": "ccache",
        "CMAKE_CXX_COMPILER_LAUNCHER": "ccache",
        "CCACHE_BASEDIR": where.inner,
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_MAXSIZE": REPO_CCACHE_MAX_SIZE,
    }
    if cache is None:
        env["CCACHE_DISABLE"] = "1"
    else:
        env["CCACHE_DIR"] = str(cache)
    return env


def stable_workspace(factory: SandboxFactory) -> bool:
    """Whether sandboxes from ``factory`` see their workspace at one path (bubblewrap's and a
    container's ``/workspace``; not rlimits-only isolation, where it is each one's host
    directory): only then can a build tree made in one be used in another."""
    paths = set()
    for _ in range(2):
        box = factory()
        try:
            paths.add(probe(box).inner)
        finally:
            box.close()
    return len(paths) == 1


def build_steps(spec: RepoSpec) -> list[tuple[str, str | None]]:
    return [("configure", spec.configure_command), ("build", spec.build_command)]


def _key(spec: RepoSpec, base: BaseTree, toolchain: str) -> str:
    blob = json.dumps(
        [base.commit, spec.configure_command, spec.build_command, spec.build_dir, toolchain]
    ).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def run_build(
    box: Sandbox,
    spec: RepoSpec,
    where: Probe,
    cache: Path | None,
    stages: dict[str, StageResult],
) -> bool:
    """Configure and build in ``box``, recording each step in ``stages``; True when both
    succeeded (a missing command is skipped)."""
    env = build_env(where, cache)
    for name, command in build_steps(spec):
        if not command:
            stages[name] = StageResult(status="skipped", reason=f"no {name} command")
            continue
        stage, _ = step(box, command, timeout=spec.timeout_s, env=env)
        stages[name] = stage
        if stage.status != "ok":
            return False
    return True


def prebuilt(
    spec: RepoSpec, base: BaseTree, factory: SandboxFactory, *, compiler_cache: bool = True
) -> Prebuilt:
    """The task's pre-built tree, made on first use (under a lock) with sandboxes from
    ``factory``."""
    box = factory()
    try:
        toolchain = box.toolchain_id
        root = cache_dir() / "repo-prebuilt" / _key(spec, base, toolchain)
        meta = root / "meta.json"
        if not meta.is_file():
            root.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(root) + ".lock"):
                if not meta.is_file():
                    _make(spec, base, box, root, compiler_cache)
        data = json.loads(meta.read_text())
        return Prebuilt(
            root=root,
            inner=data["inner"],
            configure=StageResult.model_validate(data["configure"]),
            build=StageResult.model_validate(data["build"]),
        )
    finally:
        box.close()


def _make(spec: RepoSpec, base: BaseTree, box: Sandbox, root: Path, compiler_cache: bool) -> None:
    where = probe(box)
    sibling = None
    cache = ccache_dir(box.toolchain_id) if compiler_cache and where.ccache else None
    if cache is not None:
        sibling = box.compile_sibling(rw_binds=[str(cache)], ro_binds=[])
        if sibling is None:
            cache = None
    work = sibling or box
    try:
        unpack(work, base.checkout_tar.read_bytes())
        stages: dict[str, StageResult] = {}
        ok = run_build(work, spec, where, cache, stages)
        root.mkdir(parents=True, exist_ok=True)
        if ok:
            res = work.exec(f"mkdir -p {spec.build_dir}", timeout=60)
            if res.ok:
                (root / "build.tar.tmp").write_bytes(pack(work, [spec.build_dir]))
                (root / "build.tar.tmp").rename(root / "build.tar")
        meta = {
            "inner": where.inner,
            "configure": stages["configure"].model_dump(mode="json"),
            "build": stages["build"].model_dump(mode="json"),
            "repo": spec.repo,
            "base_commit": spec.base_commit,
        }
        (root / "meta.json").write_text(json.dumps(meta, indent=1))
    finally:
        if sibling is not None:
            sibling.close()


__all__ = ["Prebuilt", "build_env", "ccache_dir", "prebuilt", "run_build", "stable_workspace"]
