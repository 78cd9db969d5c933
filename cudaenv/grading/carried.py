"""Checks carried from one grade of a solution to another grade of the same files.

Why: on a cluster the episode worker already ran the static checks and the toolchain check
(a compile of the solution's own sources) before it handed the exclusive stages to a grader;
rerunning them there spends the grader's device time on work whose answer is known. The
carry holds only stages that passed, bound to a key over the graded files (pristine context,
hidden tests and solution, as :func:`~cudaenv.grading.workspace.assemble` gathers them), the
problem and whether references are checked; the toolchain stage also to the toolchain that
checked it. A grade given checks for other files, or another toolchain, runs them itself.
Everything else (assembly, the build from the build cache, test, sanitizer, benchmark) still
runs from pristine inputs in fresh sandboxes.

A carry is trusted machinery's output (the worker's code, not the agent's): never build one
from anything a solution can write.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from cudaenv import __version__
from cudaenv.grading.static_cpp import VERSION as TOOLCHAIN_RULES
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.grading.workspace import GradingFiles
from cudaenv.problems.model import Problem

__all__ = ["STATIC_STAGES", "TOOLCHAIN_STAGES", "CarriedChecks", "carry", "checks_key", "take"]

STATIC_STAGES = ("static", "source_refs")  # the first names the rest need
TOOLCHAIN_STAGES = ("toolchain",)


class CarriedChecks(BaseModel):
    """Passed check stages of one grade, for a later grade of exactly the same inputs."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="checks_key() of the grade that ran them")
    toolchain_id: str = Field(description="the sandbox toolchain the toolchain stage ran on")
    stages: dict[str, StageResult]


def checks_key(problem: Problem, files: GradingFiles, check_references: bool) -> str:
    """What the check stages depend on: the problem, the graded files, the reference rule,
    and the checks' own version (a node running other rules checks for itself)."""
    blob = json.dumps(
        [
            __version__,
            TOOLCHAIN_RULES,
            problem.content_hash(),
            check_references,
            sorted((f.path, f.content) for f in files.all),
            sorted(f.path for f in files.solution),
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def carry(
    verdict: Verdict,
    problem: Problem,
    files: GradingFiles,
    toolchain_id: str,
    *,
    check_references: bool = True,
) -> CarriedChecks | None:
    """The check stages of ``verdict``, or None unless the static stage ran and all passed."""
    names = (*STATIC_STAGES, *TOOLCHAIN_STAGES)
    stages = {n: s for n, s in verdict.stages.items() if n in names}
    if "static" not in stages or any(s.status != "ok" for s in stages.values()):
        return None
    key = checks_key(problem, files, check_references)
    return CarriedChecks(key=key, toolchain_id=toolchain_id, stages=stages)


def take(
    verdict: Verdict,
    carried: CarriedChecks | None,
    key: str,
    names: tuple[str, ...],
    toolchain_id: str | None = None,
) -> bool:
    """Put the carried stages ``names`` into ``verdict`` (marked ``cached``) when they were
    checked for ``key`` (and ``toolchain_id``, when given); whether they were. False: the
    grade runs those checks itself."""
    if carried is None or carried.key != key or names[0] not in carried.stages:
        return False
    if toolchain_id is not None and carried.toolchain_id != toolchain_id:
        return False
    for name in names:
        if (stage := carried.stages.get(name)) is not None:
            verdict.stages[name] = stage.model_copy(update={"cached": True})
    return True
