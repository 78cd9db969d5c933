"""The one problem-tree walk behind both loaders (authoring specs, Harbor tasks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.errors import SourceNotFoundError
from cudaenv.problems.directory import SPEC_NAME, find_problem_dirs
from cudaenv.problems.discovery import find_marked_dirs
from cudaenv.problems.harbor_tasks import TASK_FILE, find_task_dirs


def _mark(root: Path, rel: str, marker: str) -> Path:
    d = root / rel
    d.mkdir(parents=True, exist_ok=True)
    (d / marker).write_text("")
    return d


def test_nested_marks_kept_or_folded_into_the_outer_one(tmp_path: Path) -> None:
    outer = _mark(tmp_path, "group/b", "m")
    inner = _mark(tmp_path, "group/b/tests/fixture", "m")
    first = _mark(tmp_path, "a", "m")
    assert find_marked_dirs(tmp_path, "m") == [first, outer, inner]
    assert find_marked_dirs(tmp_path, "m", nested=False) == [first, outer]
    assert find_marked_dirs(outer, "m") == [outer]  # a marked root is the only answer
    assert find_marked_dirs(tmp_path / "group" / "b" / "tests", "m") == [inner]


def test_both_loaders_walk_alike(tmp_path: Path) -> None:
    spec = _mark(tmp_path, "x/p1", SPEC_NAME)
    _mark(tmp_path, "x/p1/sub", SPEC_NAME)
    task = _mark(tmp_path, "t/task", TASK_FILE)
    _mark(tmp_path, "t/task/tests/again", TASK_FILE)
    assert find_problem_dirs(tmp_path) == [spec, spec / "sub"]
    assert find_task_dirs(tmp_path) == [task]
    for find in (find_problem_dirs, find_task_dirs):
        with pytest.raises(SourceNotFoundError, match="does not exist"):
            find(tmp_path / "missing")
