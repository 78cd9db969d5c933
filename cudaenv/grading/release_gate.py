"""The release gate for one problem: reference passes (as far as this machine can run it),
the baseline passes and is not faster than the reference beyond noise, the NOP fails."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from cudaenv.errors import CudaEnvError
from cudaenv.grading.grader import grade
from cudaenv.grading.speed_of_light import reference_issues
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.sandbox import gpu_access
from cudaenv.toolkit import has_gpu

NOISE = 0.9  # the reference may be at most 10% slower than the baseline


class ValidationRow(BaseModel):
    task_id: str
    group: str
    reference: str
    nop: str
    baseline: str = "-"
    speedup: float | None = None
    ok: bool
    problem: str = ""
    verdicts: dict[str, Verdict] = {}


def _describe(v: Verdict) -> str:
    if v.passed:
        return "passed"
    if v.passed is None and v.compiled:
        return "compiled, GPU stages skipped"
    return f"failed: {v.reason}"


def nop_solution(problem: Problem) -> Solution:
    """The NOP: the solution's files exist but are empty (context files only in effect)."""
    ref = problem.solution or problem.baseline_solution
    paths = [f.path for f in ref.files] if ref else ["solution.cu"]
    return Solution(task_id=problem.task_id, files=[SourceFile(path=p, content="") for p in paths])


def _mutant_issues(problem: Problem, sandbox: str, opts: Mapping[str, Any]) -> list[str]:
    """A generated problem's wrong solutions (``cudaenv.families``: tail skipped, wrong
    operator or axis, ...) must each fail its tests; one that passes means the harness misses
    that mistake. Only where the tests run here (a GPU problem's mutants need a GPU)."""
    if not getattr(problem.metadata, "family", None):
        return []
    from cudaenv.families import mutants

    issues = []
    for m in mutants(problem):
        if not m.deterministic:  # a race a CPU simulator cannot show
            continue
        v = grade(problem, m.solution(problem.task_id), sandbox=sandbox, sandbox_options=opts)
        if v.passed is not False:
            issues.append(f"mutant {m.name} ({m.kind}) is not rejected: {v.reason}")
    return issues


def validate_problem(
    problem: Problem,
    *,
    sandbox: str = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    rounds: int = 3,
) -> ValidationRow:
    opts = dict(sandbox_options or {})
    gpu = has_gpu() and gpu_access(sandbox, **opts)  # e.g. a container that asks for none
    bench = gpu and problem.has_benchmark and problem.baseline_solution is not None
    issues: list[str] = []
    verdicts: dict[str, Verdict] = {}
    if problem.solution is None:
        return ValidationRow(
            task_id=problem.task_id,
            group=problem.group,
            reference="missing",
            nop="-",
            ok=False,
            problem="no reference solution",
        )
    if bench:  # the one writer of the baseline cache: the baseline alone, before any solution
        from cudaenv.grading.baseline_pass import time_baseline

        try:
            time_baseline(
                problem, sandbox=sandbox, sandbox_options=opts, rounds=rounds, writer="validate"
            )
        except CudaEnvError as exc:
            issues.append(f"baseline timing: {exc}")
    ref = grade(
        problem,
        problem.solution,
        sandbox=sandbox,
        sandbox_options=opts,
        benchmark=bench,
        rounds=rounds,
        force_baseline=True,
    )
    verdicts["reference"] = ref
    can_run = gpu or not problem.needs_gpu
    if not ref.compiled:
        issues.append("reference does not build")
    elif can_run and not ref.passed:
        issues.append("reference fails its tests")
    nop = grade(problem, nop_solution(problem), sandbox=sandbox, sandbox_options=opts)
    verdicts["nop"] = nop
    if nop.passed or (nop.passed is None and not can_run and nop.compiled):
        issues.append(
            "the NOP is not rejected"
            if nop.passed
            else "the NOP builds (only a GPU run can reject it)"
        )
    row_baseline = "-"
    if problem.baseline_solution is not None:
        base = grade(
            problem,
            problem.baseline_solution,
            sandbox=sandbox,
            sandbox_options=opts,
            check_references=False,
        )
        verdicts["baseline"] = base
        row_baseline = _describe(base)
        if not base.compiled:
            issues.append("baseline does not build")
        elif can_run and not base.passed:
            issues.append("baseline fails its tests")
    if bench and ref.speedup is not None and ref.speedup < NOISE:
        issues.append(f"reference slower than baseline ({ref.speedup:.2f}x)")
    if bench and ref.passed and ref.solution_ms is None:
        issues.append("benchmark produced no timing")
    if bench and ref.solution_ms is not None:  # the declared work against the device's peaks
        issues += reference_issues(problem, ref)
    if can_run and ref.passed:
        issues += _mutant_issues(problem, sandbox, opts)
    # a NOP that builds cannot be told apart from a passing solution without a GPU; it is only
    # an error where the tests could run
    if not can_run and nop.passed is None and nop.compiled:
        issues = [i for i in issues if not i.startswith("the NOP builds")]
    return ValidationRow(
        task_id=problem.task_id,
        group=problem.group,
        reference=_describe(ref),
        nop=_describe(nop) if not nop.passed else "PASSED (bad)",
        baseline=row_baseline,
        speedup=ref.speedup,
        ok=not issues,
        problem="; ".join(issues),
        verdicts=verdicts,
    )
