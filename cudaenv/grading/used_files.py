"""Which solution files the build and the tests can actually use.

Agents leave scratch files behind (notes, experiments, helper scripts). Grading them would
let a harmless scratch file fail the static checks of an honest solution, and would let files
nobody compiles widen what can change the graded build. The graded set is the closure of the
roots (the problem's declared solution paths and anything its commands name or glob) under
quoted/angle ``#include`` and Python imports; the rest is left out of the grading workspace
and reported as unused.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from cudaenv.problems.model import Problem, SourceFile

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def _command_words(problem: Problem) -> list[str]:
    words: list[str] = []
    for cmd in (problem.build_command, problem.test_command, problem.benchmark_command):
        try:
            words += shlex.split(cmd or "")
        except ValueError:
            words += (cmd or "").split()
    return [w for w in words if not w.startswith("-")]


def _py_targets(path: str, text: str) -> list[str]:
    """Workspace paths a Python file may import (modules and packages)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    here = PurePosixPath(path).parent
    names: list[PurePosixPath] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [PurePosixPath(*a.name.split(".")) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(max(node.level - 1, 0)):
                base = base.parent
            mod = PurePosixPath(*node.module.split(".")) if node.module else PurePosixPath()
            root = base / mod if node.level else mod
            names.append(root)
            names += [root / a.name for a in node.names]
    out: list[str] = []
    for name in names:
        out += [f"{name}.py", str(name / "__init__.py")]
    return out


def _cpp_targets(path: str, text: str, include_dirs: Iterable[str]) -> list[str]:
    here = PurePosixPath(path).parent
    out: list[str] = []
    for kind, name in _INCLUDE.findall(text):
        if kind == '"':
            out.append(str(here / name))
        out += [str(PurePosixPath(d) / name) for d in include_dirs]
        out.append(name)
    return out


def reachable(
    problem: Problem, files: list[SourceFile], declared: set[str], include_dirs: set[str]
) -> tuple[list[SourceFile], list[str]]:
    """(used files, unused paths). Without declared paths everything counts as used."""
    if not declared:
        return files, []
    by_path = {f.path: f for f in files}
    words = _command_words(problem)
    todo = [p for p in by_path if p in declared or any(fnmatchcase(p, w) for w in words)]
    used: set[str] = set()
    while todo:
        path = todo.pop()
        if path in used:
            continue
        used.add(path)
        text = by_path[path].content
        if path.endswith(".py"):
            targets = _py_targets(path, text)
        else:
            targets = _cpp_targets(path, text, include_dirs | {"."})
        todo += [str(PurePosixPath(t)) for t in targets if str(PurePosixPath(t)) in by_path]
    return [f for f in files if f.path in used], sorted(p for p in by_path if p not in used)
