"""SWE-bench-style repository tasks (one JSON row per line, e.g. SWE-kokkos-bench) as
``repository`` Problems (:class:`~cudaenv.problems.repo_model.RepoSpec`).

A row names a repository, a base commit, an issue (``problem_statement``), the production
(gold) ``patch`` (or ``code_patch``) and the held-out ``test_patch``, and how to check a fix:
``configure_command`` and ``build_command`` (or ``build_targets``, built with
``cmake --build <build_dir> --target ...``), then ``f2p_commands`` (fail-to-pass) and
``p2p_commands`` (pass-to-pass), each run from the repository root. ``FAIL_TO_PASS`` /
``PASS_TO_PASS`` (or their lowercase twins; JSON-encoded lists are accepted) name test ids
that the test frameworks' reports must show passing. Without command lists, a row's
``test_command`` is run with its test ids appended. Where the test patch alone fails is
``metadata.failure_stage`` (``compile`` or ``runtime``), checked by ``cudaenv validate``.

Our extensions: ``repo_path`` (a local clone, relative to the JSONL file), ``build_dir``
(default ``build``), ``f2p_checks`` / ``p2p_checks`` (``{command, kind}`` with kind ``build``
or ``test``) and ``repo_policy`` (:class:`~cudaenv.problems.repo_model.RepoPolicy`). The
repository is read from a local clone only (no network): ``repo_path``, ``repo`` itself when it
is a local path, or ``$CUDAENV_REPOS_DIR/<owner>/<name>`` or ``<owner>__<name>``. Loading
checks that the commit exists and that both patches apply to it; the checkout itself is made
once, on first use (:mod:`cudaenv.problems.repo_base`).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.model import Problem, Solution
from cudaenv.problems.repo_base import git_env, resolve_commit, run_git
from cudaenv.problems.repo_model import (
    RepoCheck,
    RepoPolicy,
    check_kind,
    glob_match,
    patch_paths,
)
from cudaenv.problems.validation import problem_from_dict

REPOS_ENV = "CUDAENV_REPOS_DIR"
TEST_COMMAND = "the task's hidden fail-to-pass and pass-to-pass checks"
_STAGES = {
    "compile": "compile",
    "compile_failure": "compile",
    "build": "compile",
    "runtime": "runtime",
    "runtime_failure": "runtime",
    "test": "runtime",
}


def _list(value: Any, field: str, task_id: str) -> list[str]:
    """A list of strings, also accepted JSON-encoded (as SWE-bench stores FAIL_TO_PASS)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.lstrip().startswith("[") else [value]
        except json.JSONDecodeError as exc:
            raise SpecError(f"not a JSON list: {exc}", task_id=task_id, field=field) from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError("must be a list of strings", task_id=task_id, field=field)
    return value


def find_repo(row: dict[str, Any], base: Path, task_id: str) -> Path:
    """The local clone a row names (see the module docstring)."""
    repo = str(row.get("repo") or "")
    candidates: list[Path] = []
    if row.get("repo_path"):
        candidates.append(base / str(row["repo_path"]))
    if repo:
        candidates.append(base / repo.removeprefix("file://"))
        root = os.environ.get(REPOS_ENV)
        if root:
            candidates += [Path(root) / repo, Path(root) / repo.replace("/", "__")]
    for c in candidates:
        if (c / ".git").exists() or (c / "HEAD").is_file():
            return c.resolve()
    tried = ", ".join(str(c) for c in candidates) or "(no repo or repo_path given)"
    raise SourceNotFoundError(
        f"no local clone of {repo or '?'} for {task_id}; tried {tried} (set repo_path or ${REPOS_ENV})"
    )


def check_patch_applies(source: Path, commit: str, patch: str, task_id: str, field: str) -> None:
    """SpecError unless ``patch`` applies to ``commit`` of ``source`` (in a private index)."""
    git_dir = source / ".git" if (source / ".git").exists() else source
    with tempfile.TemporaryDirectory(prefix="cudaenv-apply-") as tmp:
        env = git_env(GIT_DIR=str(git_dir), GIT_INDEX_FILE=str(Path(tmp) / "index"))
        run_git(["read-tree", commit], env=env)
        res = run_git(
            ["apply", "--cached", "--check", "--binary", "--whitespace=nowarn", "-"],
            env=env,
            data=patch.encode("utf-8", "surrogateescape"),
            check=False,
        )
        if res.returncode != 0:
            why = res.stderr.decode(errors="replace").strip()[:500]
            raise SpecError(
                f"{field} does not apply at base_commit: {why}", task_id=task_id, field=field
            )


def _checks(row: dict[str, Any], phase: str, ids: list[str], task_id: str) -> list[RepoCheck]:
    structured = row.get(f"{phase}_checks")
    if structured is not None:
        try:
            return [RepoCheck.model_validate(c) for c in structured]
        except ValidationError as exc:
            raise SpecError(
                str(exc).splitlines()[0], task_id=task_id, field=f"{phase}_checks"
            ) from exc
    commands = _list(row.get(f"{phase}_commands"), f"{phase}_commands", task_id)
    if not commands and ids and row.get("test_command"):
        commands = [f"{row['test_command']} {' '.join(shlex.quote(t) for t in ids)}"]
    return [RepoCheck(command=c, kind=check_kind(c)) for c in commands]


def _failure_stage(row: dict[str, Any], meta: dict[str, Any], task_id: str) -> str | None:
    value = meta.get("failure_stage", row.get("failure_stage"))
    if value is None:
        return None
    stage = _STAGES.get(str(value).lower())
    if stage is None:
        raise SpecError(
            f"unknown failure stage {value!r}; use compile or runtime",
            task_id=task_id,
            field="metadata.failure_stage",
        )
    return stage


def problem_from_row(row: dict[str, Any], *, base_dir: Path, source: str | None = None) -> Problem:
    """One repository-task row as a ``repository`` Problem (see the module docstring)."""
    task_id = row.get("instance_id")
    if not isinstance(task_id, str) or not task_id:
        raise SpecError(
            "a repository task needs an instance_id", source=source, field="instance_id"
        )
    for field in ("base_commit", "problem_statement", "test_patch"):
        if not isinstance(row.get(field), str) or not row[field]:
            raise SpecError(f"missing {field}", source=source, task_id=task_id, field=field)
    f2p_ids = _list(row.get("FAIL_TO_PASS", row.get("fail_to_pass")), "FAIL_TO_PASS", task_id)
    p2p_ids = _list(row.get("PASS_TO_PASS", row.get("pass_to_pass")), "PASS_TO_PASS", task_id)
    f2p = _checks(row, "f2p", f2p_ids, task_id)
    p2p = _checks(row, "p2p", p2p_ids, task_id)
    if not f2p:
        raise SpecError(
            "needs f2p_commands, or test_command with FAIL_TO_PASS",
            source=source,
            task_id=task_id,
        )
    repo_path = find_repo(row, base_dir, task_id)
    commit = resolve_commit(repo_path, row["base_commit"], task_id)
    check_patch_applies(repo_path, commit, row["test_patch"], task_id, "test_patch")
    gold = row.get("patch") or row.get("code_patch")
    gold = gold if isinstance(gold, str) and gold.strip() else None
    if gold is not None:
        check_patch_applies(repo_path, commit, gold, task_id, "patch")
    meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    build_dir = str(row.get("build_dir") or "build")
    targets = _list(row.get("build_targets"), "build_targets", task_id)
    build = row.get("build_command") or None
    if build is None and targets:
        build = f"cmake --build {shlex.quote(build_dir)} --target " + " ".join(
            map(shlex.quote, targets)
        )
    try:
        policy = RepoPolicy.model_validate(row.get("repo_policy") or {})
    except ValidationError as exc:
        raise SpecError(str(exc).splitlines()[0], task_id=task_id, field="repo_policy") from exc
    gold_paths = patch_paths(gold) if gold else []
    repository = {
        "repo": str(row.get("repo") or repo_path.name),
        "source": str(repo_path),
        "base_commit": commit,
        "test_patch": row["test_patch"],
        "configure_command": row.get("configure_command") or None,
        "build_command": build,
        "build_dir": build_dir,
        "build_targets": targets,
        "f2p": f2p,
        "p2p": p2p,
        "fail_to_pass": f2p_ids,
        "pass_to_pass": p2p_ids,
        "failure_stage": _failure_stage(row, meta, task_id),
        "editable_build_files": [p for p in gold_paths if glob_match(p, policy.build_files)],
        "policy": policy,
    }
    timeout = row.get("timeout_seconds")
    if isinstance(timeout, int | float) and timeout > 0:
        repository["timeout_s"] = float(timeout)
    metadata: dict[str, Any] = {
        "tags": [t for t in meta.get("tags") or [] if isinstance(t, str)],
        "requires_gpu": bool(meta.get("requires_gpu", False)),
        "repo": repository["repo"],
        "base_commit": commit,
        "changed_files": row.get("changed_files"),
    }
    if isinstance(meta.get("difficulty"), str):
        metadata["difficulty"] = meta["difficulty"]
    group = row.get("group") if isinstance(row.get("group"), str) and row.get("group") else None
    shown = [c for c in (repository["configure_command"], build) if c]
    data = {
        "task_id": task_id,
        "type": "repository",
        "group": group or repository["repo"],
        "prompt": row["problem_statement"].strip(),
        "metadata": metadata,
        "build_command": " && ".join(shown) or None,
        "test_command": TEST_COMMAND,
        "solution": Solution(task_id=task_id, type="patch", patch=gold) if gold else None,
        "repository": repository,
    }
    return problem_from_dict(data, source=source)


def rows(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, row) of every non-empty line of a JSONL file."""
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecError(f"line {lineno} is not valid JSON: {exc}", source=str(path)) from exc
        if not isinstance(row, dict):
            raise SpecError(f"line {lineno} is not a JSON object", source=str(path))
        yield lineno, row


def read_repo_tasks(path: str | Path) -> list[Problem]:
    """Every row of a repository-task JSONL file as a Problem."""
    path = Path(path)
    if not path.is_file():
        raise SourceNotFoundError(f"repository tasks {path} do not exist")
    return [
        problem_from_row(row, base_dir=path.parent, source=f"{path}:{n}") for n, row in rows(path)
    ]


__all__ = [
    "TEST_COMMAND",
    "find_repo",
    "patch_paths",
    "problem_from_row",
    "read_repo_tasks",
    "rows",
]
