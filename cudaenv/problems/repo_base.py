"""The base checkout of a repository task: ``base_commit`` with its history squashed to one
commit, modes and symlinks kept, cached once per (repository, commit).

Why squashed and still a git repository: the benchmark removes history, not the repository;
``git status`` and ``git diff`` must work in the agent's checkout (against one commit that
says nothing about the future), and the grader composes what it grades with git itself.

A :class:`BaseTree` is two things in the cache: ``checkout.tar`` (the working tree and its
``.git``, what the agent and the grader unpack) and ``base.git`` (the same commit, bare, for
the host-side work of :class:`Staging`). Every git command here runs with no system or global
configuration (no filters, hooks or helpers of this host), and the clean checkout is made with
git's own checkout, so attributes apply as in a clone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.toolkit import cache_dir

BASE_BRANCH = "base"
GIT_TIMEOUT_S = 600
IDENTITY = {"name": "cudaenv", "email": "cudaenv@localhost"}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def git_env(**extra: str) -> dict[str, str]:
    """This process's environment for git, minus every configuration git would read from the
    host (a filter, hook, pager or credential helper of this machine never runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        LC_ALL="C",
    )
    env.update(extra)
    return env


def run_git(
    args: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    data: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` with :func:`git_env`; a non-zero exit raises SpecError unless ``check`` is
    False (then the caller reads ``returncode`` and ``stderr``)."""
    try:
        res = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env=env if env is not None else git_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError(f"git {args[0]} failed: {exc}") from exc
    if check and res.returncode != 0:
        err = res.stderr.decode(errors="replace").strip()
        raise SpecError(f"git {' '.join(args[:2])} failed: {err[:800]}")
    return res


@dataclass(frozen=True)
class BaseTree:
    """The squashed base of one repository task (see the module docstring)."""

    root: Path
    commit: str  # the squashed commit
    source_commit: str  # the repository's own base_commit, full

    @property
    def git_dir(self) -> Path:
        return self.root / "base.git"

    @property
    def checkout_tar(self) -> Path:
        return self.root / "checkout.tar"

    def ls_tree(self) -> dict[str, tuple[str, str]]:
        """Every path of the base commit: (mode, blob id)."""
        out = run_git(["--git-dir", str(self.git_dir), "ls-tree", "-r", "-z", self.commit])
        files: dict[str, tuple[str, str]] = {}
        for entry in out.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, _, blob = meta.split(" ")
                files[path] = (mode, blob)
        return files


def resolve_commit(source: Path, commit: str, task_id: str | None = None) -> str:
    """The full id of ``commit`` in ``source``, or SpecError naming the field."""
    res = run_git(
        [
            "--git-dir",
            str(_git_dir(source)),
            "rev-parse",
            "--verify",
            "--quiet",
            f"{commit}^{{commit}}",
        ],
        check=False,
    )
    if res.returncode != 0:
        raise SpecError(
            f"{commit} is not a commit of {source}", task_id=task_id, field="base_commit"
        )
    return res.stdout.decode().strip()


def _git_dir(source: Path) -> Path:
    return source / ".git" if (source / ".git").exists() else source


def _key(spec: RepoSpec) -> str:
    blob = json.dumps([str(Path(spec.source).resolve()), spec.base_commit]).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def base_tree(spec: RepoSpec) -> BaseTree:
    """The task's squashed base, made on first use (under a lock: concurrent graders of the
    same task build it once)."""
    root = cache_dir() / "repo-bases" / _key(spec)
    done = root / "done.json"
    if not done.is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root) + ".lock"):
            if not done.is_file():
                _build(spec, root)
    meta = json.loads(done.read_text())
    return BaseTree(root=root, commit=meta["commit"], source_commit=meta["source_commit"])


def _build(spec: RepoSpec, root: Path) -> None:
    source = Path(spec.source)
    if not _git_dir(source).exists():
        raise SourceNotFoundError(f"repository {spec.repo}: no git repository at {source}")
    full = resolve_commit(source, spec.base_commit)
    src = str(_git_dir(source))
    date = run_git(["--git-dir", src, "log", "-1", "--format=%cI", full]).stdout.decode().strip()
    shutil.rmtree(root, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix="base-", dir=root.parent))
    try:
        tree = tmp / "tree"
        tree.mkdir()
        env = git_env(GIT_INDEX_FILE=str(tmp / "index"))
        run_git(["--git-dir", src, "read-tree", full], env=env)
        checkout = [
            "-c",
            "core.bare=false",
            "-c",
            "core.symlinks=true",
            "-c",
            "core.autocrlf=false",
        ]
        run_git(
            ["--git-dir", src, "--work-tree", str(tree), *checkout, "checkout-index", "-a", "-f"],
            env=env,
        )
        (tmp / "index").unlink()
        who = {
            "GIT_AUTHOR_NAME": IDENTITY["name"],
            "GIT_AUTHOR_EMAIL": IDENTITY["email"],
            "GIT_COMMITTER_NAME": IDENTITY["name"],
            "GIT_COMMITTER_EMAIL": IDENTITY["email"],
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        run_git(["init", "-q", "-b", BASE_BRANCH], cwd=tree)
        run_git(["add", "-A", "-f"], cwd=tree)
        message = f"{spec.repo} at {full[:12]} (history squashed)"
        run_git(["commit", "-q", "--no-verify", "-m", message], cwd=tree, env=git_env(**who))
        run_git(["repack", "-adq"], cwd=tree)
        run_git(["prune-packed"], cwd=tree)
        commit = run_git(["rev-parse", "HEAD"], cwd=tree).stdout.decode().strip()
        with tarfile.open(tmp / "checkout.tar", "w", format=tarfile.PAX_FORMAT) as tar:
            for entry in sorted(tree.iterdir()):
                tar.add(entry, arcname=entry.name)
        (tree / ".git").rename(tmp / "base.git")
        run_git(["--git-dir", str(tmp / "base.git"), "config", "core.bare", "true"])
        shutil.rmtree(tree)
        meta = {"commit": commit, "source_commit": full, "repo": spec.repo}
        (tmp / "done.json").write_text(json.dumps(meta))
        tmp.rename(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Staging:
    """A private index (and object store) over a base commit, for composing trees on the host
    without a working tree: the base's objects are read through git's alternates, nothing is
    written into the cached base."""

    def __init__(self, base: BaseTree, workdir: Path) -> None:
        self.base = base
        objects = workdir / "objects"
        objects.mkdir(parents=True, exist_ok=True)
        self.env = git_env(
            GIT_DIR=str(base.git_dir),
            GIT_INDEX_FILE=str(workdir / "index"),
            GIT_OBJECT_DIRECTORY=str(objects),
            GIT_ALTERNATE_OBJECT_DIRECTORIES=str(base.git_dir / "objects"),
        )
        self.git(["read-tree", base.commit])

    def git(
        self, args: list[str], *, data: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        return run_git(args, env=self.env, data=data, check=check)

    def apply(self, patch: bytes, *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """``git apply --cached`` of ``patch`` to the index."""
        args = ["apply", "--cached", "--binary", "--whitespace=nowarn", "-"]
        return self.git(args, data=patch, check=check)

    def changed(self) -> list[tuple[str, str]]:
        """(status letter, path) of every path the index changes against the base, renames
        as a deletion and an addition."""
        out = self.git(
            ["diff", "--cached", "--name-status", "-z", "--no-renames", self.base.commit]
        )
        parts = out.stdout.decode("utf-8", "surrogateescape").split("\0")
        return [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    def restore(self, paths: list[str], base_files: dict[str, tuple[str, str]]) -> None:
        """Put ``paths`` back to their base version (a path the base lacks is removed)."""
        lines = []
        for p in paths:
            if p in base_files:
                mode, blob = base_files[p]
                lines.append(f"{mode} {blob}\t{p}")
            else:
                lines.append(f"0 {'0' * 40}\t{p}")
        if lines:
            data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
            self.git(["update-index", "--index-info"], data=data)

    def put(self, path: str, data: bytes, mode: str = "100644") -> None:
        blob = self.git(["hash-object", "-w", "--stdin"], data=data).stdout.decode().strip()
        self.git(["update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}"])

    def remove(self, path: str) -> None:
        self.git(["update-index", "--force-remove", "--", path])

    def diff(self) -> bytes:
        """The patch from the base to the index (binary files included, full blob ids)."""
        args = ["diff", "--cached", "--binary", "--full-index", "--no-renames", self.base.commit]
        return self.git(args).stdout

    def entries(self) -> dict[str, tuple[str, str]]:
        """Every path of the index: (mode, blob id)."""
        out = self.git(["ls-files", "-s", "-z"]).stdout.decode("utf-8", "surrogateescape")
        files: dict[str, tuple[str, str]] = {}
        for entry in out.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, blob, _ = meta.split(" ")
                files[path] = (mode, blob)
        return files

    def blob(self, blob: str) -> bytes:
        return self.git(["cat-file", "blob", blob]).stdout


def blob_id(data: bytes) -> str:
    """git's id of a blob holding ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


__all__ = [
    "BASE_BRANCH",
    "BaseTree",
    "Staging",
    "base_tree",
    "blob_id",
    "git_env",
    "resolve_commit",
    "run_git",
]
