"""The diff of a working tree against a repository task's base commit, computed on the host.

Why here and with git: the agent's episode (:mod:`cudaenv.env.repo_workspace`) and Harbor's
verifier (:mod:`cudaenv.interop.harbor_verify`) both turn a directory the agent left into its
solution, and neither may trust the directory's own ``.git``. A private index over the
cached base records the tree (``git add -A``): new files, deletions, mode changes and symlinks
included; build trees (directories holding a ``CMakeCache.txt``), the task's build directory,
``.git`` directories and files the repository's ``.gitignore`` files ignore left out. No
filter, hook or attribute driver runs (git sees no configuration but ours).
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

from cudaenv.problems.model import Solution
from cudaenv.problems.paths import check_relative_path
from cudaenv.problems.repo_base import Staging, base_tree
from cudaenv.problems.repo_model import RepoSpec

IGNORED = ("__pycache__/", "*.pyc", ".pytest_cache/", ".cudaenv-*", ".git/")
BUILD_TREE_MARK = "CMakeCache.txt"


def extract(data: bytes, dest: Path) -> None:
    """Unpack a tar without trusting it: regular files and directories at safe paths first,
    symlinks last and never followed; anything else is left out."""
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
        inside = [p for p in path.parents if dest in p.parents]
        if not path.exists() and not path.is_symlink() and not any(p.is_symlink() for p in inside):
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, path)


def _build_trees(tree: Path) -> list[str]:
    """Directories under ``tree`` that hold a CMake build tree (relative, for an ignore file)."""
    found = []
    for root, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git" and not Path(root, d).is_symlink()]
        if BUILD_TREE_MARK in files and Path(root) != tree:
            found.append(Path(root).relative_to(tree).as_posix())
            dirs[:] = []
    return found


def tree_patch(spec: RepoSpec, tree: Path) -> bytes:
    """The diff from the task's base commit to ``tree`` (see the module docstring); files that
    are not UTF-8 text are diffed as binary, so the patch is text."""
    base = base_tree(spec)
    with tempfile.TemporaryDirectory(prefix="cudaenv-diff-") as tmp:
        root = Path(tmp)
        excludes = root / "exclude"
        skip = [f"/{spec.build_dir}/", *(f"/{d}/" for d in _build_trees(tree)), *IGNORED]
        excludes.write_text("\n".join(skip) + "\n")
        stage = Staging(base, root / "git")
        work = ["-c", "core.bare=false", "-c", f"core.excludesFile={excludes}"]
        stage.git([*work, "--work-tree", str(tree), "add", "-A"])
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
        args = ["diff", "--cached", "--binary", "--full-index", "--no-renames", base.commit]
        return stage.git(["-c", f"core.attributesFile={attrs}", *args]).stdout


def patch_solution(task_id: str, patch: bytes) -> Solution:
    """A ``patch`` Solution (a ``file`` Solution with no files when nothing changed)."""
    text = patch.decode("utf-8", "replace")
    if not text.strip():
        return Solution(task_id=task_id, type="file", files=[])
    return Solution(task_id=task_id, type="patch", patch=text)


__all__ = ["extract", "patch_solution", "tree_patch"]
