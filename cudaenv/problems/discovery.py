"""Finding problems on disk: the one walk over a tree for directories marked by a file.

Authoring directories are marked by ``problem-spec.yaml`` (:mod:`cudaenv.problems.directory`),
Harbor tasks by ``task.toml`` (:mod:`cudaenv.problems.harbor_tasks`); both loaders find theirs here.
"""

from __future__ import annotations

from pathlib import Path

from cudaenv.errors import SourceNotFoundError

__all__ = ["find_marked_dirs"]


def find_marked_dirs(root: str | Path, marker: str, *, nested: bool = True) -> list[Path]:
    """Every directory under ``root`` (inclusive) holding an entry named ``marker``, sorted.

    A ``root`` that holds one is the only answer. With ``nested=False`` a marked directory
    inside another marked one belongs to that one (a Harbor task's tests may embed a
    ``task.toml``) and is left out. Raises SourceNotFoundError when ``root`` does not exist.
    """
    root = Path(root)
    if not root.exists():
        raise SourceNotFoundError(f"problem source {root} does not exist")
    if (root / marker).is_file():
        return [root]
    found = sorted(p.parent for p in root.rglob(marker))
    if nested:
        return found
    outermost: list[Path] = []
    for d in found:
        if not any(d.is_relative_to(parent) for parent in outermost):
            outermost.append(d)
    return outermost
