"""Assemble the files of a fresh grading workspace.

Order: pristine context files, then the solution's files, then the hidden tests. A solution
file at a protected path, or inside a directory that holds test files, is dropped (this stops
"changing what is graded": replacing the harness, headers, or adding sources that a build
glob such as ``test/*.cu`` would pick up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cudaenv.errors import SpecError, UnsafePathError
from cudaenv.problems.model import Problem, Solution, SourceFile

MAX_SOLUTION_FILE_BYTES = 1 << 20
MAX_SOLUTION_FILES = 64

SolutionInput = Solution | Mapping[str, str] | Iterable[SourceFile]


@dataclass
class GradingFiles:
    """What goes into the grading workspace, and what was refused."""

    context: list[SourceFile]
    solution: list[SourceFile]
    tests: list[SourceFile]
    dropped: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)

    @property
    def all(self) -> list[SourceFile]:
        return [*self.context, *self.solution, *self.tests]


def normalise_solution(files: SolutionInput) -> tuple[list[SourceFile], list[str]]:
    """Accept a Solution, a {path: content} mapping or SourceFiles; unsafe paths are rejected."""
    if isinstance(files, Solution):
        if files.type == "patch":
            raise SpecError(
                "patch solutions are not supported by the grader yet",
                task_id=files.task_id,
                field="type",
            )
        return list(files.files), []
    items = (
        list(files.items()) if isinstance(files, Mapping) else [(f.path, f.content) for f in files]
    )
    out: list[SourceFile] = []
    rejected: list[str] = []
    for path, content in items:
        try:
            out.append(SourceFile(path=path, content=content))
        except (ValueError, UnsafePathError):
            rejected.append(str(path))
    return out, rejected


def assemble(problem: Problem, files: SolutionInput) -> GradingFiles:
    """Split the solution into kept and dropped files against the problem's protected paths."""
    solution, rejected = normalise_solution(files)
    protected = problem.protected_paths
    test_dirs = {str(PurePosixPath(f.path).parent) for f in problem.test_files} - {"."}
    kept: list[SourceFile] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for f in solution:
        parents = {str(p) for p in PurePosixPath(f.path).parents}
        too_big = len(f.content.encode("utf-8")) > MAX_SOLUTION_FILE_BYTES
        if (
            f.path in protected
            or parents & test_dirs
            or too_big
            or f.path in seen
            or len(kept) >= MAX_SOLUTION_FILES
        ):
            dropped.append(f.path)
            continue
        seen.add(f.path)
        kept.append(f)
    context = [f for f in problem.context_files if f.path not in seen]
    return GradingFiles(
        context=context,
        solution=kept,
        tests=list(problem.test_files),
        dropped=sorted(set(dropped)),
        rejected=rejected,
    )
