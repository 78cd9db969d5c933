"""SWE-bench-style repository tasks (one JSON row per line, e.g. SWE-kokkos-bench) as Problems.

A row names a repository, a base commit, an issue (``problem_statement``), the gold ``patch``
and the held-out ``test_patch``, and how to check a fix: ``configure_command`` and
``build_command``, then ``f2p_commands`` (fail-to-pass) and ``p2p_commands`` (pass-to-pass),
each a shell command run from the repository root. Without the command lists, a row's
``test_command`` is run with its ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` test ids appended.

The repository is read at load time from a local clone (no network): the row's
``repo_path`` (our extension, relative to the JSONL file), ``repo`` itself when it is a local
path, or ``$CUDAENV_REPOS_DIR/<owner>/<name>`` or ``$CUDAENV_REPOS_DIR/<owner>__<name>``.

As a Problem: the context files are the repository's text files at ``base_commit`` (the agent
may change any of them: ``allow_context_override``); the files the test patch touches are
test files holding their post-patch text (so they are restored over whatever the agent did,
and the test patch is in effect), plus a hidden script that runs the fail-to-pass and
pass-to-pass commands and writes a reward file; the gold patch becomes the reference solution
(the files it changes, post-patch). Grading thus starts from a clean checkout plus the agent's
changed files, restores the protected test paths, builds, runs the commands offline, and the
reward is 1 only if all pass. Binary files, symlinks and files over 1 MiB are not carried
(``metadata.skipped_files`` counts them); a file the agent deletes is not deleted in grading.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaenv.errors import SourceNotFoundError, SpecError, UnsafePathError
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.problems.paths import check_relative_path
from cudaenv.problems.validation import problem_from_dict

REPOS_ENV = "CUDAENV_REPOS_DIR"
VERIFY_SCRIPT = ".cudaenv/run_tests.sh"
REWARD_FILE = ".cudaenv/logs/reward.json"
MAX_FILE_BYTES = 1 << 20
DEFAULT_TIMEOUT_S = 1800.0
GIT_TIMEOUT_S = 300


def _git(args: list[str], *, cwd: Path | None = None, data: bytes | None = None) -> bytes:
    try:
        res = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError(f"git {args[0]} failed: {exc}") from exc
    if res.returncode != 0:
        raise SpecError(
            f"git {' '.join(args[:2])} failed: {res.stderr.decode(errors='replace').strip()[:500]}"
        )
    return res.stdout


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


def _find_repo(row: dict[str, Any], base: Path, task_id: str) -> Path:
    repo = str(row.get("repo") or "")
    candidates: list[Path] = []
    if row.get("repo_path"):
        candidates.append(base / str(row["repo_path"]))
    if repo:
        local = repo.removeprefix("file://")
        candidates.append(base / local)
        root = os.environ.get(REPOS_ENV)
        if root:
            candidates += [Path(root) / repo, Path(root) / repo.replace("/", "__")]
    for c in candidates:
        if (c / ".git").exists() or (c / "HEAD").is_file():
            return c
    tried = ", ".join(str(c) for c in candidates) or "(no repo or repo_path given)"
    raise SourceNotFoundError(
        f"no local clone of {repo or '?'} for {task_id}; tried {tried} (set repo_path or ${REPOS_ENV})"
    )


def _snapshot(repo: Path, commit: str) -> tuple[dict[str, str], list[str]]:
    """The repository's text files at ``commit``, and the paths that could not be carried."""
    blob = _git(["archive", "--format=tar", commit], cwd=repo)
    files: dict[str, str] = {}
    skipped: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for m in tar.getmembers():
            if m.isdir() or m.name == "pax_global_header":
                continue
            fh = tar.extractfile(m) if m.isfile() and m.size <= MAX_FILE_BYTES else None
            data = fh.read() if fh is not None else b""
            try:
                path = check_relative_path(m.name)
                if fh is None or b"\0" in data:
                    raise ValueError
                files[path] = data.decode("utf-8")
            except (ValueError, UnsafePathError):
                skipped.append(m.name)
    return files, skipped


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff reads or writes (old and new sides, renames included)."""
    paths: list[str] = []
    for line in patch.splitlines():
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        found = list(m.groups()) if m else []
        for prefix, strip in (
            ("--- ", "a/"),
            ("+++ ", "b/"),
            ("rename from ", ""),
            ("rename to ", ""),
        ):
            if line.startswith(prefix):
                name = line[len(prefix) :].split("\t")[0].strip()
                if name != "/dev/null":
                    found.append(name.removeprefix(strip) if strip else name)
        for p in found:
            if p not in paths:
                paths.append(p)
    return paths


def apply_patch(
    files: dict[str, str], patch: str, task_id: str, field: str
) -> dict[str, str | None]:
    """Apply ``patch`` to ``files``; returns each touched path's new text (None: deleted)."""
    touched = patch_paths(patch)
    with tempfile.TemporaryDirectory(prefix="cudaenv-patch-") as tmp:
        root = Path(tmp)
        _git(["init", "-q"], cwd=root)
        for rel in touched:
            if rel in files:
                dest = root / check_relative_path(rel, field=field, task_id=task_id)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(files[rel], encoding="utf-8")
        try:
            _git(["apply", "--whitespace=nowarn", "-"], cwd=root, data=patch.encode())
        except SpecError as exc:
            raise SpecError(
                f"{field} does not apply at base_commit: {exc.detail}", task_id=task_id, field=field
            ) from exc
        out: dict[str, str | None] = {}
        for rel in touched:
            p = root / rel
            out[rel] = p.read_text(encoding="utf-8") if p.is_file() else None
        return out


def _verify_script(task_id: str, f2p: list[str], p2p: list[str]) -> str:
    runs = [f"run f2p {shlex.quote(c)}" for c in f2p] + [f"run p2p {shlex.quote(c)}" for c in p2p]
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            f"# Hidden verifier of repository task {task_id}: every fail-to-pass and pass-to-pass",
            "# command must exit 0 (run offline, from the repository root).",
            "set -u",
            'cd "$(dirname "$0")/.."',
            f"mkdir -p {shlex.quote(str(Path(REWARD_FILE).parent))}",
            "total=0; failed=0",
            "run() {",
            "  total=$((total + 1))",
            '  echo "=== [$1] $2"',
            '  if bash -c "$2"; then echo "=== [$1] ok"; else echo "=== [$1] FAILED"; failed=$((failed + 1)); fi',
            "}",
            *runs,
            'reward=0; if [ "$failed" -eq 0 ] && [ "$total" -gt 0 ]; then reward=1; fi',
            'printf \'{"reward": %d, "commands": %d, "failed": %d}\\n\' "$reward" "$total" "$failed" > '
            + shlex.quote(REWARD_FILE),
            '[ "$reward" -eq 1 ]',
            "",
        ]
    )


def _commands(
    row: dict[str, Any], key: str, ids_key: str, task_id: str
) -> tuple[list[str], list[str]]:
    ids = _list(row.get(ids_key, row.get(ids_key.lower())), ids_key, task_id)
    commands = _list(row.get(key), key, task_id)
    if not commands and ids and row.get("test_command"):
        commands = [f"{row['test_command']} {' '.join(shlex.quote(t) for t in ids)}"]
    return commands, ids


def problem_from_row(row: dict[str, Any], *, base_dir: Path, source: str | None = None) -> Problem:
    """One repository-task row as a Problem (see the module docstring)."""
    task_id = row.get("instance_id")
    if not isinstance(task_id, str) or not task_id:
        raise SpecError(
            "a repository task needs an instance_id", source=source, field="instance_id"
        )
    for field in ("base_commit", "problem_statement", "test_patch"):
        if not isinstance(row.get(field), str) or not row[field]:
            raise SpecError(f"missing {field}", source=source, task_id=task_id, field=field)
    f2p, f2p_ids = _commands(row, "f2p_commands", "FAIL_TO_PASS", task_id)
    p2p, p2p_ids = _commands(row, "p2p_commands", "PASS_TO_PASS", task_id)
    if not f2p and not p2p:
        raise SpecError(
            "needs f2p_commands/p2p_commands, or test_command with FAIL_TO_PASS",
            source=source,
            task_id=task_id,
        )
    repo = _find_repo(row, base_dir, task_id)
    base, skipped = _snapshot(repo, row["base_commit"])
    tests = apply_patch(base, row["test_patch"], task_id, "test_patch")
    test_files = [SourceFile(path=p, content=t) for p, t in tests.items() if t is not None]
    test_files.append(SourceFile(path=VERIFY_SCRIPT, content=_verify_script(task_id, f2p, p2p)))
    context = [SourceFile(path=p, content=t) for p, t in sorted(base.items()) if p not in tests]
    gold = row.get("patch") or row.get("code_patch")
    solution = None
    if isinstance(gold, str) and gold.strip():
        fixed = apply_patch(base, gold, task_id, "patch")
        sol_files = [
            SourceFile(path=p, content=t)
            for p, t in fixed.items()
            if t is not None and p not in tests
        ]
        solution = Solution(task_id=task_id, files=sol_files) if sol_files else None
    meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    build = " && ".join(
        f"({c})"
        for c in (row.get("configure_command"), row.get("build_command"))
        if isinstance(c, str) and c.strip()
    )
    metadata: dict[str, Any] = {
        "tags": [t for t in meta.get("tags") or [] if isinstance(t, str)],
        "requires_gpu": bool(meta.get("requires_gpu", False)),
        "repo": row.get("repo"),
        "base_commit": row["base_commit"],
        "FAIL_TO_PASS": f2p_ids,
        "PASS_TO_PASS": p2p_ids,
        "build_targets": row.get("build_targets"),
        "changed_files": row.get("changed_files"),
        "skipped_files": len(skipped),
    }
    if isinstance(meta.get("difficulty"), str):
        metadata["difficulty"] = meta["difficulty"]
    timeout = row.get("timeout_seconds")
    data = {
        "task_id": task_id,
        "type": "cuda_cpp",
        "group": row.get("group")
        if isinstance(row.get("group"), str) and row.get("group")
        else str(row.get("repo") or "repo"),
        "prompt": (
            f"{row['problem_statement'].strip()}\n\nThe workspace holds the repository {row.get('repo') or ''} at "
            f"commit {row['base_commit'][:12]}. Change its source files to resolve the issue above; "
            "hidden tests are run on your changes afterwards."
        ),
        "metadata": metadata,
        "context_files": context,
        "test_files": test_files,
        "build_command": build or None,
        "test_command": f"bash {VERIFY_SCRIPT}",
        "timeout_seconds": float(timeout)
        if isinstance(timeout, int | float) and timeout > 0
        else DEFAULT_TIMEOUT_S,
        "solution": solution,
        "allow_context_override": True,
        "reward_file": REWARD_FILE,
    }
    return problem_from_dict(data, source=source)


def _rows(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
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
        problem_from_row(row, base_dir=path.parent, source=f"{path}:{n}") for n, row in _rows(path)
    ]


__all__ = ["REWARD_FILE", "apply_patch", "patch_paths", "problem_from_row", "read_repo_tasks"]
