"""The split harness's shared libraries (``envs/_shared/``), added to the problems that use them.

Why a loader step: one copy of each library lives in the package (``envs/_shared/test/`` for
the runner side, ``envs/_shared/check/`` for the checker side), yet a loaded problem must be
self-contained, so a datapack, a Harbor export or a grading workspace carries the library
like any hidden file. A library is added to a problem whose own files of that side (or its
commands) name it (``#include "cudaenv_runner.h"``, ``import cudaenv_check``); a problem's
own file of the same path wins. Problem directories anywhere (a user's suite, the red-team
fixtures) get the same libraries; family renderers call :func:`with_shared_libraries` too.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from cudaenv.problems.model import SourceFile

#: the folder under the package's ``envs/`` holding the libraries, one subfolder per side
SHARED_LIBRARY_DIR = "_shared"
SIDES = ("test", "check")


def _read_side(root: Path, side: str) -> tuple[SourceFile, ...]:
    folder = root / side
    if not folder.is_dir():
        return ()
    return tuple(
        SourceFile(path=f"{side}/{p.name}", content=p.read_text(encoding="utf-8"))
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".")
    )


@functools.cache
def shared_libraries() -> dict[str, tuple[SourceFile, ...]]:
    """The libraries of each side, as files at their workspace paths (``test/...``,
    ``check/...``); empty where the package has none."""
    from cudaenv.package_data import data_path

    try:
        root = data_path("envs") / SHARED_LIBRARY_DIR
    except FileNotFoundError:
        return {side: () for side in SIDES}
    return {side: _read_side(root, side) for side in SIDES}


def _named(lib: SourceFile, texts: Iterable[str]) -> bool:
    """Whether any text names the library (its module or header stem)."""
    stem = PurePosixPath(lib.path).stem
    return any(stem in t for t in texts)


def with_shared_libraries(
    test_files: list[SourceFile],
    check_files: list[SourceFile],
    commands: Iterable[object] = (),
) -> tuple[list[SourceFile], list[SourceFile]]:
    """``test_files`` and ``check_files`` plus the shared libraries each side names (in its
    own files or in ``commands``), sorted by path; a file already there is kept as it is."""
    cmds = [c for c in commands if isinstance(c, str) and c]
    out: list[list[SourceFile]] = []
    for side, own in (("test", test_files), ("check", check_files)):
        have = {f.path for f in own}
        texts = [*(f.content for f in own), *cmds]
        added = [
            lib
            for lib in shared_libraries()[side]
            if own and lib.path not in have and _named(lib, texts)
        ]
        out.append(sorted([*own, *added], key=lambda f: f.path) if added else list(own))
    return out[0], out[1]


__all__ = ["SHARED_LIBRARY_DIR", "shared_libraries", "with_shared_libraries"]
