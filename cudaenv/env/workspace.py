"""The agent's solution, as collected from its workspace for grading."""

from __future__ import annotations

from cudaenv.errors import CudaEnvError
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.sandbox.base import Sandbox

SOURCE_FIRST = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".py")


def collect_solution(box: Sandbox, problem: Problem) -> list[SourceFile] | Solution:
    """The workspace's text files minus unchanged visible files, sources first; for a
    repository task, the diff of the checkout (:mod:`cudaenv.env.repo_workspace`)."""
    if problem.repository is not None:
        from cudaenv.env.repo_workspace import collect

        return collect(box, problem)
    pristine = {f.path: f.content for f in problem.context_files}
    out: list[SourceFile] = []
    for path in box.list_files():
        try:
            data = box.read_file(path)
        except (OSError, CudaEnvError):
            continue
        if len(data) > 1 << 20 or b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if pristine.get(path) == text:
            continue
        out.append(SourceFile(path=path, content=text))
    out.sort(key=lambda f: (not f.path.endswith(SOURCE_FIRST), f.path))
    return out
