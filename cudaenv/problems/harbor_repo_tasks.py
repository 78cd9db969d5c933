"""Import Harbor tasks in SWE-kokkos-bench's release layout as ``repository`` Problems.

Such a task directory holds ``metadata.json`` (the row: ``instance_id``, ``base_commit``, the
commands and test ids), ``tests/test.patch``, ``solution/gold.patch``, ``instruction.md`` and
``environment/Dockerfile``, which makes the repository checkout (and a pre-warmed build tree).

The repository comes from a local clone when there is one (``repo_path`` in the metadata,
``$CUDAENV_REPOS_DIR``); otherwise the task's Dockerfile is built (``docker build``, its own
context, no network) and the checkout is copied out of the image's working directory (the
``[environment] workdir`` of ``task.toml``, else the image's ``WORKDIR``). A checkout whose
``.git`` holds ``base_commit`` (or the ``squashed_commit`` our own export records) is used as
it is; one without that history becomes a repository of one commit (build trees left out),
which is then the task's base.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from filelock import FileLock

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import git_env, run_git
from cudaenv.problems.swe_tasks import find_repo, problem_from_row
from cudaenv.toolkit import cache_dir

DOCKER_TIMEOUT_S = 3600


def is_repo_task_dir(directory: Path) -> bool:
    """A Harbor task in SWE-kokkos-bench's layout (a test patch and a row's metadata)."""
    return (directory / "tests" / "test.patch").is_file() and (
        directory / "metadata.json"
    ).is_file()


def _has_commit(repo: Path, commit: str) -> bool:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    res = run_git(
        ["--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"], check=False
    )
    return res.returncode == 0


def _docker(*args: str) -> str:
    if shutil.which("docker") is None:
        raise SourceNotFoundError("no local clone and no docker CLI to build the task's image")
    res = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=DOCKER_TIMEOUT_S
    )
    if res.returncode != 0:
        raise SourceNotFoundError(f"docker {args[0]} failed: {(res.stderr or res.stdout)[-800:]}")
    return res.stdout


def _workdir(directory: Path, image: str) -> str:
    try:
        cfg = tomllib.loads((directory / "task.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        cfg = {}
    env = cfg.get("environment") if isinstance(cfg.get("environment"), dict) else {}
    if isinstance(env.get("workdir"), str) and env["workdir"]:
        return env["workdir"]
    found = _docker("image", "inspect", "--format", "{{.Config.WorkingDir}}", image).strip()
    return found or "/"


def checkout_from_image(directory: Path, commits: list[str], build_dir: str) -> tuple[Path, str]:
    """Build the task's Dockerfile and copy its checkout out (cached per task directory's
    environment); returns the repository and the commit to use as its base (the first of
    ``commits`` the checkout holds, else its own squashed one)."""
    context = directory / "environment"
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(path.relative_to(context).as_posix().encode() + b"\0" + path.read_bytes())
    key = digest.hexdigest()[:20]
    dest = cache_dir() / "harbor-repos" / key
    done = dest / "cudaenv-import.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock"):
        if not done.is_file():
            image = f"cudaenv-harbor-import:{key}"
            _docker("build", "--network", "none", "-q", "-t", image, str(context))
            workdir = _workdir(directory, image)
            cid = _docker("create", image).strip()
            tmp = Path(tempfile.mkdtemp(prefix="import-", dir=dest.parent))
            try:
                _docker("cp", f"{cid}:{workdir}/.", str(tmp / "repo"))
                held = [c for c in commits if c and _has_commit(tmp / "repo", c)]
                commit = held[0] if held else _squash(tmp / "repo", build_dir)
                shutil.rmtree(dest, ignore_errors=True)
                (tmp / "repo").rename(dest)
                done.write_text(json.dumps({"image": image, "workdir": workdir, "commit": commit}))
            finally:
                _docker("rm", "-f", cid)
                shutil.rmtree(tmp, ignore_errors=True)
    meta = json.loads(done.read_text())
    return dest, meta["commit"]


def _squash(repo: Path, build_dir: str) -> str:
    """Make ``repo`` (a checkout without usable history) one commit; build trees left out."""
    shutil.rmtree(repo / ".git", ignore_errors=True)
    skip = [f"/{build_dir}/"]
    for root, dirs, files in os.walk(repo):
        if "CMakeCache.txt" in files:
            skip.append("/" + Path(root).relative_to(repo).as_posix() + "/")
            dirs[:] = []
    run_git(["init", "-q"], cwd=repo)
    (repo / ".git" / "info" / "exclude").write_text("\n".join(skip) + "\n")
    run_git(["add", "-A"], cwd=repo)
    who = {"GIT_AUTHOR_NAME": "cudaenv", "GIT_AUTHOR_EMAIL": "cudaenv@localhost"}
    who |= {"GIT_COMMITTER_NAME": "cudaenv", "GIT_COMMITTER_EMAIL": "cudaenv@localhost"}
    run_git(
        ["commit", "-q", "--no-verify", "-m", "imported checkout"], cwd=repo, env=git_env(**who)
    )
    return run_git(["rev-parse", "HEAD"], cwd=repo).stdout.decode().strip()


def load_repo_task_dir(directory: str | Path) -> Problem:
    """One Harbor task in SWE-kokkos-bench's layout as a ``repository`` Problem."""
    d = Path(directory)
    try:
        row: dict[str, Any] = json.loads((d / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"unreadable metadata.json: {exc}", source=str(d)) from exc
    if not isinstance(row, dict):
        raise SpecError("metadata.json is not an object", source=str(d))
    row = dict(row)
    row.setdefault("instance_id", d.name)
    row["test_patch"] = (d / "tests" / "test.patch").read_text(encoding="utf-8")
    gold = d / "solution" / "gold.patch"
    if gold.is_file() and not row.get("patch"):
        row["patch"] = gold.read_text(encoding="utf-8")
    if not row.get("problem_statement") and (d / "instruction.md").is_file():
        row["problem_statement"] = (d / "instruction.md").read_text(encoding="utf-8")
    task_id = str(row["instance_id"])
    try:
        clone = find_repo(row, d, task_id)
        if not _has_commit(clone, str(row.get("base_commit", ""))):
            raise SourceNotFoundError(f"{clone} lacks {row.get('base_commit')}")
    except SourceNotFoundError:
        clone, commit = checkout_from_image(
            d, str(row.get("base_commit", "")), str(row.get("build_dir") or "build")
        )
        row["base_commit"] = commit
    row["repo_path"] = str(clone)
    return problem_from_row(row, base_dir=d, source=str(d / "metadata.json"))


__all__ = ["checkout_from_image", "is_repo_task_dir", "load_repo_task_dir"]
