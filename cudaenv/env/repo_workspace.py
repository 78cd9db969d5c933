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

import tempfile
from collections.abc import Callable
from pathlib import Path

from cudaenv.errors import SandboxError
from cudaenv.grading.repo_prebuild import prebuilt, stable_workspace
from cudaenv.grading.repo_sandbox import probe, unpack
from cudaenv.problems.model import Mode, Problem, Solution
from cudaenv.problems.repo_base import base_tree
from cudaenv.problems.repo_diff import extract, patch_solution, tree_patch
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.sandbox.base import Sandbox

COLLECT = ".cudaenv-collect.tar"


def seed(box: Sandbox, problem: Problem, factory: Callable[[], Sandbox] | None) -> bool:
    """Lay the task's base checkout (and pre-built tree, made with ``factory``'s sandboxes,
    when its paths hold here) into ``box``; True when the pre-built tree was used."""
    spec = _spec(problem)
    base = base_tree(spec)
    unpack(box, base.checkout_tar.read_bytes())
    used = False
    if factory is not None and stable_workspace(factory):
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


def collect(box: Sandbox, problem: Problem) -> Solution:
    """The agent's diff against the base commit, as a ``patch`` Solution (a ``file`` Solution
    with no files when it changed nothing); see the module docstring."""
    spec = _spec(problem)
    # build trees below the root (a CMakeCache.txt marks one) are left out; an in-source
    # build at the root is not a reason to leave the whole checkout out
    listing = "/tmp/cudaenv-build-trees"
    pack = (
        f"find . -mindepth 2 -name CMakeCache.txt -not -path './.git/*' -printf '%h\\n' "
        f"> {listing}; tar --format=posix -cf {COLLECT} --exclude=./{COLLECT} --exclude=.git "
        f"--exclude-from={listing} --exclude=./{spec.build_dir} "
        "--exclude=__pycache__ --exclude=.pytest_cache ."
    )
    res = box.exec(pack, timeout=600)
    if not res.ok:
        raise SandboxError(f"could not pack the workspace: {(res.stderr or res.stdout)[-300:]}")
    data = box.read_file(COLLECT)
    with tempfile.TemporaryDirectory(prefix="cudaenv-collect-") as tmp:
        tree = Path(tmp)
        extract(data, tree)
        return patch_solution(problem.task_id, tree_patch(spec, tree))


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
