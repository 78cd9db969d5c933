"""A grade as data, and the grader seam of :class:`~cudaenv.env.core.CudaEnv`.

Why: the env freezes the workspace, collects its files and closes the agent's sandbox itself
(the escape defenses), then hands a :class:`GradeRequest` to its grader. The default grader
runs :func:`~cudaenv.grading.grader.grade` here; another one can run it elsewhere (the Ray
cluster's workers route it to a GPU grader) without copying the env's freeze and collection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudaenv.grading.build import SandboxFactory
from cudaenv.grading.grader import grade
from cudaenv.grading.verdict import Verdict
from cudaenv.grading.workspace import SolutionInput
from cudaenv.problems.model import Mode, Problem, SourceFile

__all__ = ["GradeRequest", "Grader", "grade_here"]


@dataclass
class GradeRequest:
    """One ``grade()`` call as data: what to grade and how. ``sandbox_options`` is None when
    ``sandbox`` is a factory; ``options`` holds ``grade()``'s other keywords (``benchmark``,
    ``sanitizer``, ``rounds``, ...: the env's ``grade_options``)."""

    problem: Problem
    files: list[SourceFile]
    mode: Mode = "solve"
    sandbox: str | SandboxFactory = "local"
    sandbox_options: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def timed(self) -> bool:
        """Whether this grade benchmarks (``grade()``'s default: in optimize mode)."""
        bench = self.options.get("benchmark")
        bench = self.mode == "optimize" if bench is None else bool(bench)
        return bench and bool(self.problem.benchmark_command)

    def run(self, files: SolutionInput | None = None, **overrides: Any) -> Verdict:
        """``grade()`` of this request in this process (``files`` and keywords replaced)."""
        opts = {**self.options, **overrides}
        return grade(
            self.problem,
            self.files if files is None else files,
            mode=self.mode,
            sandbox=self.sandbox,
            sandbox_options=None if callable(self.sandbox) else self.sandbox_options,
            **opts,
        )


#: What ``CudaEnv(grader=...)`` takes: a request in, its Verdict out. An exception it raises
#: becomes an infrastructure verdict (masked, never scored as the agent's failure).
Grader = Callable[[GradeRequest], Verdict]


def grade_here(request: GradeRequest) -> Verdict:
    """The default grader: :func:`~cudaenv.grading.grader.grade` in this process."""
    return request.run()
