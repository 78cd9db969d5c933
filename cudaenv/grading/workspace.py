"""Assemble the files of a fresh grading workspace.

Order: pristine context files, then the solution's files, then the hidden tests. A solution
file at a protected path, or inside a directory that holds test files, is dropped (this stops
"changing what is graded": replacing the harness, headers, or adding sources that a build
glob such as ``test/*.cu`` would pick up).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cudaenv.errors import SpecError, UnsafePathError
from cudaenv.grading.used_files import reachable
from cudaenv.problems.model import Problem, Solution, SourceFile

MAX_SOLUTION_FILE_BYTES = 1 << 20
MAX_SOLUTION_FILES = 64
HEADER_SUFFIXES = {"", ".h", ".hh", ".hpp", ".cuh", ".inl", ".tcc"}
# forge_results: files that imitate a grader's own outputs (Harbor reward files, our profiler
# reports, verdicts); they never reach the grading workspace and their presence is flagged
RESULT_FILE_NAMES = {"reward.json", "reward.txt", "verdict.json"}
RESULT_FILE_PREFIXES = (".cudaenv-", "logs/verifier/")

SolutionInput = Solution | Mapping[str, str] | Iterable[SourceFile]


@dataclass
class GradingFiles:
    """What goes into the grading workspace, and what was refused."""

    context: list[SourceFile]
    solution: list[SourceFile]
    tests: list[SourceFile]
    dropped: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

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


def include_dirs(problem: Problem) -> set[str]:
    """Directories the build searches for headers: ``-I``/``-isystem``/``-iquote`` of the build
    command and every directory holding context files ("." for the workspace root)."""
    dirs = {str(PurePosixPath(f.path).parent) for f in problem.context_files} - {"."}
    try:
        words = shlex.split(problem.build_command or "")
    except ValueError:
        words = (problem.build_command or "").split()
    for i, word in enumerate(words):
        for flag in ("-I", "-isystem", "-iquote"):
            if word == flag and i + 1 < len(words):
                dirs.add(words[i + 1])
            elif word.startswith(flag) and len(word) > len(flag) and flag == "-I":
                dirs.add(word[len(flag) :])
    return {str(PurePosixPath(d)) for d in dirs if not d.startswith("/")}


def build_outputs(problem: Problem) -> set[str]:
    """Files the build command writes (``-o X``): a solution file there would stand in for the
    build's product wherever the build is skipped or cached (change_graded: a fake test.out)."""
    try:
        words = shlex.split(problem.build_command or "")
    except ValueError:
        words = (problem.build_command or "").split()
    outs = {words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o"}
    outs |= {w[2:] for w in words if w.startswith("-o") and len(w) > 2}
    return {str(PurePosixPath(o)) for o in outs if not o.startswith("/")}


def _included_names(problem: Problem) -> set[str]:
    """Header names the hidden tests and context files include (quoted or angled)."""
    names: set[str] = set()
    for f in (*problem.test_files, *problem.context_files):
        for line in f.content.splitlines():
            stripped = line.strip()
            if stripped.startswith("#") and "include" in stripped:
                for open_, close in (('"', '"'), ("<", ">")):
                    if open_ in stripped:
                        names.add(stripped.split(open_, 1)[1].split(close, 1)[0])
    return names


def _suspicion(
    problem: Problem, path: str, declared: set[str], inc_dirs: set[str], included: set[str]
) -> str | None:
    """Why a solution file must not reach the grading workspace, if it must not."""
    pure = PurePosixPath(path)
    parents = {str(p) for p in pure.parents} - {"."}
    if path in problem.protected_paths:
        return "replaces a protected file (harness, test or context file)"
    if pure.name in RESULT_FILE_NAMES or path.startswith(RESULT_FILE_PREFIXES):
        return "imitates a grader result file"
    if path in build_outputs(problem):
        return "stands in for a build output"
    if path in declared or (
        problem.allow_context_override and path in {f.path for f in problem.context_files}
    ):
        return None
    # change_graded: a new file in an include directory can shadow a header the harness (or a
    # system header it includes) looks up there first: include/cstring, include/stdio.h
    inside = sorted(parents & inc_dirs)
    if inside:
        return f"adds a file to the include directory {inside[0]!r} (could shadow a header the harness uses)"
    root_header = "." in inc_dirs and "/" not in path and pure.suffix.lower() in HEADER_SUFFIXES
    if root_header and (not pure.suffix or path in included):
        return "adds a header to the workspace root, an include directory (could shadow a header)"
    return None


def assemble(problem: Problem, files: SolutionInput) -> GradingFiles:
    """Split the solution into kept and dropped files against the problem's protected paths.

    Besides protected paths and test directories, files that could change what is graded
    without being the solution (a header in an include directory that the reference solution
    does not have, a fake result file) are dropped and reported in ``suspicious``.
    """
    solution, rejected = normalise_solution(files)
    protected = problem.protected_paths
    test_dirs = {str(PurePosixPath(f.path).parent) for f in problem.test_files} - {"."}
    declared = {f.path for s in (problem.solution, problem.baseline_solution) if s for f in s.files}
    inc_dirs = include_dirs(problem)
    included = _included_names(problem)
    kept: list[SourceFile] = []
    dropped: list[str] = []
    suspicious: list[str] = []
    seen: set[str] = set()
    for f in solution:
        parents = {str(p) for p in PurePosixPath(f.path).parents}
        too_big = len(f.content.encode("utf-8")) > MAX_SOLUTION_FILE_BYTES
        why = _suspicion(problem, f.path, declared, inc_dirs, included)
        if parents & test_dirs and why is None:
            why = "adds a file to the hidden test directory (a build glob would compile it)"
        if why is not None:
            suspicious.append(f"{f.path}: {why}")
        if (
            why
            or f.path in protected
            or too_big
            or f.path in seen
            or len(kept) >= MAX_SOLUTION_FILES
        ):
            dropped.append(f.path)
            continue
        seen.add(f.path)
        kept.append(f)
    unused: list[str] = []
    if problem.reward_file is None:  # repository/Harbor tasks may change any file
        kept, unused = reachable(problem, kept, declared, inc_dirs)
        seen = {f.path for f in kept}
    context = [f for f in problem.context_files if f.path not in seen]
    return GradingFiles(
        context=context,
        solution=kept,
        unused=unused,
        tests=list(problem.test_files),
        dropped=sorted(set(dropped)),
        rejected=rejected,
        suspicious=suspicious,
    )
