"""The agent's side of a repository task: its workspace, its instruction, and its solution
(the diff of what it changed).

The workspace is the task's base checkout (history squashed to one commit, so ``git status``
and ``git diff`` work), the files of the test patch at their base version, and, where its
paths hold, the task's pre-built build tree in the build directory, so the first build the
agent runs is incremental.

The solution is collected after the agent's processes are gone: the workspace's files, build
trees (directories holding a ``CMakeCache.txt``) and ``.git`` left out, are packed in the
sandbox and compared on the host, with git, against the base commit: new files, deletions,
mode changes and symlinks included, ignored files (the repository's ``.gitignore`` files) left
out. The diff is bounded by size (the task's ``max_patch_bytes``), not by a file count. The
agent's ``.git`` is never read.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from cudaenv.errors import SandboxError
from cudaenv.grading.repo_prebuild import prebuilt
from cudaenv.grading.repo_sandbox import probe, unpack
from cudaenv.problems.model import Mode, Problem, Solution
from cudaenv.problems.paths import check_relative_path
from cudaenv.problems.repo_base import Staging, base_tree
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.sandbox.base import Sandbox

COLLECT = ".cudaenv-collect.tar"
IGNORED = ("__pycache__/", "*.pyc", ".pytest_cache/", ".cudaenv-*")


def seed(box: Sandbox, problem: Problem, factory: Callable[[], Sandbox] | None) -> bool:
    """Lay the task's base checkout (and pre-built tree, made with ``factory``'s sandboxes,
    when its paths hold here) into ``box``; True when the pre-built tree was used."""
    spec = _spec(problem)
    base = base_tree(spec)
    unpack(box, base.checkout_tar.read_bytes())
    used = False
    if factory is not None:
        pre = prebuilt(spec, base, factory)
        if pre.usable_in(probe(box)):
            unpack(box, pre.archive.read_bytes())
            used = True
    box.exec(f"printf '/%s/\\n' {spec.build_dir} >> .git/info/exclude", timeout=60)
    return used


def _spec(problem: Problem) -> RepoSpec:
    if problem.repository is None:
        raise ValueError(f"{problem.task_id} is not a repository task")
    return problem.repository


def _extract(data: bytes, dest: Path) -> None:
    """Unpack the sandbox's tar without trusting it: regular files and directories at safe
    paths first, symlinks last and never followed; anything else is left out."""
    links: list[tuple[str, str]] = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar:
            try:
                rel = check_relative_path(m.name)
            except ValueError:
                continue
            path = dest / rel
            if any(p.is_symlink() for p in [path, *path.parents] if dest in p.parents):
                continue
            if m.isdir():
                path.mkdir(parents=True, exist_ok=True)
            elif m.isfile():
                path.parent.mkdir(parents=True, exist_ok=True)
                fh = tar.extractfile(m)
                path.write_bytes(fh.read() if fh else b"")
                os.chmod(path, 0o755 if m.mode & 0o111 else 0o644)
            elif m.issym():
                links.append((rel, m.linkname))
    for rel, target in links:
        path = dest / rel
        if (
            not path.exists()
            and not path.is_symlink()
            and not any(p.is_symlink() for p in path.parents if dest in p.parents)
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, path)


def collect(box: Sandbox, problem: Problem) -> Solution:
    """The agent's diff against the base commit, as a ``patch`` Solution (a ``file`` Solution
    with no files when it changed nothing); see the module docstring."""
    spec = _spec(problem)
    pack = (
        f"tar --format=posix -cf {COLLECT} --exclude=./{COLLECT} --exclude=.git "
        f"--exclude-tag-all=CMakeCache.txt --exclude=./{spec.build_dir} "
        "--exclude=__pycache__ --exclude=.pytest_cache ."
    )
    res = box.exec(pack, timeout=600)
    if not res.ok:
        raise SandboxError(f"could not pack the workspace: {(res.stderr or res.stdout)[-300:]}")
    data = box.read_file(COLLECT)
    base = base_tree(spec)
    with tempfile.TemporaryDirectory(prefix="cudaenv-collect-") as tmp:
        root = Path(tmp)
        tree = root / "tree"
        tree.mkdir()
        _extract(data, tree)
        excludes = root / "exclude"
        excludes.write_text("\n".join([f"/{spec.build_dir}/", *IGNORED]) + "\n")
        stage = Staging(base, root / "git")
        where = [
            "-c",
            "core.bare=false",
            "-c",
            f"core.excludesFile={excludes}",
            "--work-tree",
            str(tree),
        ]
        stage.git([*where, "add", "-A"])
        binary = []
        for status, path in stage.changed():
            f = tree / path
            if status != "D" and f.is_file() and not f.is_symlink():
                try:
                    f.read_bytes().decode("utf-8")
                except UnicodeDecodeError:
                    binary.append(path)
        attrs = root / "attributes"
        attrs.write_text("".join(f"/{p} binary\n" for p in binary))
        stage.env["GIT_ATTR_NOSYSTEM"] = "1"
        patch = stage.git(
            [
                "-c",
                f"core.attributesFile={attrs}",
                "diff",
                "--cached",
                "--binary",
                "--full-index",
                "--no-renames",
                base.commit,
            ]
        ).stdout
    text = patch.decode("utf-8", "replace")
    if not text.strip():
        return Solution(task_id=problem.task_id, type="file", files=[])
    return Solution(task_id=problem.task_id, type="patch", patch=text)


def task_text(problem: Problem, mode: Mode) -> str:
    """The instruction of a repository task: the issue, where things are, how to build, what
    grading restores. Not a listing of the repository's files."""
    spec = _spec(problem)
    policy = spec.policy
    editable = ", ".join(f"`{p}`" for p in spec.editable_build_files)
    if policy.build_file_changes == "kept":
        build_rule = "Changes to build-system files are kept."
    elif editable and policy.build_file_changes == "production_patch":
        build_rule = (
            f"Build-system files are restored to their original contents, except {editable}."
        )
    else:
        build_rule = "Build-system files (CMakeLists.txt, *.cmake, Makefiles, ...) are restored to their original contents."
    lines = [
        f"# Task {problem.task_id} ({spec.repo}, mode: {mode})",
        "",
        problem.prompt.strip(),
        "",
        "## Your workspace",
        f"The workspace is a git checkout of {spec.repo} at commit {spec.base_commit[:12]} "
        "(history squashed to one commit: `git status` and `git diff` show your changes).",
    ]
    if spec.configure_command or spec.build_command:
        lines.append(
            f"`{spec.build_dir}/` holds a build tree configured and built at that commit; "
            "rebuilding after a change is incremental."
        )
        if spec.configure_command:
            lines.append(f"Configure: `{spec.configure_command}`")
        if spec.build_command:
            lines.append(f"Build: `{spec.build_command}`")
    lines += [
        "",
        "## Grading",
        "Change the repository's source files to resolve the issue. When you submit, your diff "
        "against the base commit is applied to a clean checkout; hidden tests are added, the "
        "project is configured and built, and the hidden fail-to-pass and pass-to-pass checks "
        "run without network. Test files and directories, test-runner and CI configuration are "
        "restored to their original contents. " + build_rule,
    ]
    return "\n".join(lines)


__all__ = ["collect", "seed", "task_text"]
