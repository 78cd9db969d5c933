"""Where each sample failed: one column of the failure matrix per grading stage.

A sample is filed under the first stage of the grading pipeline that failed, except that a
suspected hack (tampering, a survivor process, a rewritten harness, an impossible timing) is
its own column whatever stage caught it, and an infrastructure fault (never the agent's) is
always its own. Samples that passed, could not run here (no GPU) or never reached grading
(the agent's own error) have columns of their own so every sample is counted once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from cudaenv.grading.summary import Graded, not_run
from cudaenv.grading.verdict import Verdict

__all__ = ["COLUMNS", "STAGES", "failure_matrix", "outcome"]

#: the failure stages, in pipeline order, then the two that are not stages
STAGES = ("static", "build", "test", "sanitizer", "benchmark", "suspected hack", "infrastructure")
#: every column of the matrix: the failures, then the samples that did not fail
COLUMNS = (*STAGES, "agent error", "not run", "passed")
#: grading's stage names (``Verdict.stages`` keys) in the order they run, and their column
_PIPELINE = (
    ("static", "static"),
    ("source_refs", "static"),
    ("build", "build"),
    ("toolchain", "static"),  # the static rules again, on what the compiler saw
    ("test", "test"),
    ("sanitizer", "sanitizer"),
    ("benchmark", "benchmark"),
)


def outcome(v: Verdict) -> str:
    """The column of one sample (see the module docstring).

    >>> from cudaenv.grading.verdict import StageResult
    >>> outcome(Verdict(task_id="t", passed=False, failure="agent",
    ...     stages={"build": StageResult(status="ok"), "test": StageResult(status="failed")}))
    'test'
    """
    if v.failure == "infrastructure":
        return "infrastructure"
    if v.passed:
        return "passed"
    if not_run(v):
        return "not run"
    if v.suspected_hack:
        return "suspected hack"
    for name, column in _PIPELINE:
        stage = v.stages.get(name)
        if stage is not None and stage.status not in ("ok", "skipped"):
            return column
    return "agent error" if not v.stages else "test"


def failure_matrix(rows: Iterable[Graded]) -> dict[str, Counter[str]]:
    """Per task_id, how many samples fell in each column (columns with no sample absent)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        out[r.task_id][outcome(r.verdict)] += 1
    return dict(sorted(out.items()))
