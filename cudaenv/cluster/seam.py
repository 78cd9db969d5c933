"""The one seam between the cluster and grading: which work needs an exclusive device, the
part of a grade an episode worker runs, and the part a grader runs.

Why one narrow module: ``cudaenv/grading/`` is being restructured, so the cluster depends on
its public calls only (:func:`~cudaenv.grading.grader.grade`, ``assemble``, the build cache's
key, the checks it carries), here. ``grade()`` has no split between the build path and the
exclusive stages yet, so:

- :func:`build_stages` (episode worker, CPU, no device): ``grade()`` without benchmark or
  sanitizer, with the GPU hidden (``CUDAENV_FORCE_NO_GPU`` is set in episode workers): static
  checks, build, toolchain checks, and the tests of a problem that needs no GPU. A failure
  there is final and never waits for a device. Otherwise the build-cache entries of the
  solution (and, when the baseline has not been timed anywhere yet, of the baseline) are
  shipped with the work (:mod:`cudaenv.cluster.artifacts`), and so are the passed static and
  toolchain stages (:mod:`cudaenv.grading.carried`, bound to the graded files' hash).
- :func:`run_exclusive_stages` (grader, holding its device): the shipped builds go into the
  grader node's build cache, then ``grade()`` from pristine inputs, whose static and
  toolchain stages are the carried ones (not rerun: same files, same toolchain), whose build
  is a cache restore (no compiler runs), and whose test, sanitizer and benchmark stages run
  on the grader's device. Only the tests of a benchmarked CPU problem still run twice.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from cudaenv.cluster.artifacts import ShippedBuild, export_build, import_build
from cudaenv.grading.build_cache import build_key
from cudaenv.grading.carried import CarriedChecks, carry
from cudaenv.grading.request import GradeRequest
from cudaenv.grading.verdict import Verdict
from cudaenv.grading.workspace import GradingFiles, assemble
from cudaenv.problems.model import Problem
from cudaenv.sandbox import make_sandbox
from cudaenv.sandbox.base import Sandbox

Kind = Literal["gpu", "cpu"]
SandboxSpec = str | Callable[[], Sandbox]
NO_GPU_ENV = "CUDAENV_FORCE_NO_GPU"  # toolkit.gpu_info() answers None while it is "1"


#: One ``grade()`` call as data (what the env hands its grader), to run elsewhere.
GradeCall = GradeRequest


@dataclass
class ExclusiveWork:
    """What a grader runs: the call, the builds shipped with it, and its place in the queue.
    ``call`` None is an empty exclusive stage (the scheduler's overhead, measured alone)."""

    kind: Kind
    call: GradeCall | None
    episode: str = ""  # the episode's key, for the status table
    priority: int = 1
    builds: list[Any] = field(default_factory=list)  # ObjectRefs of ShippedBuild (or models)
    before_s: float = 0.0  # the worker's part of the grade
    checks: CarriedChecks | None = None  # the static and toolchain stages the worker passed
    task: str = ""  # the problem an empty stage stands for (queue fairness)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @property
    def problem_key(self) -> str:
        return self.call.problem.task_id if self.call is not None else self.task


def route(call: GradeCall, served: set[str]) -> Kind | None:
    """The grader kind ``call`` needs, or None: graded on the worker, start to end.

    A problem that runs on a GPU (its tests, or a cuda_python problem's) goes to a GPU
    grader when the cluster has one; without one it is graded as on any machine without a
    GPU (GPU stages skipped, or numba-cuda's simulator). A benchmarked problem that needs
    no GPU goes to a CPU grader (or a GPU grader when there is no CPU grader): its timing
    must not share the machine either. Everything else never waits for a grader.
    """
    p = call.problem
    if p.needs_gpu or p.problem_type == "cuda_python":
        return "gpu" if "gpu" in served else None
    if call.timed:
        for kind in ("cpu", "gpu"):
            if kind in served:
                return kind  # type: ignore[return-value]
    return None


class _NotingBoxes:
    """The factory handed to ``grade()``: the call's sandboxes, each one's toolchain noted
    (a build-cache key includes it)."""

    def __init__(self, call: GradeCall) -> None:
        opts = dict(call.sandbox_options or {})
        spec = call.sandbox
        self._make = spec if callable(spec) else (lambda: make_sandbox(spec, **opts))
        self.toolchains: list[str] = []

    def __call__(self) -> Sandbox:
        box = self._make()
        self.toolchains.append(box.toolchain_id)
        return box


def _shipped(problem: Problem, files: GradingFiles, toolchains: list[str]) -> ShippedBuild | None:
    if not problem.build_command or not toolchains:
        return None
    key = build_key(files.all, problem.build_command, problem.problem_type, toolchains[0])
    return export_build(key)


class WorkerPart(NamedTuple):
    """What :func:`build_stages` established: a final ``verdict`` (graded here, or failed
    before any device was needed), or None and the ``builds`` and ``checks`` to ship with
    the exclusive work; and its ``seconds``."""

    verdict: Verdict | None
    builds: list[ShippedBuild]
    seconds: float
    checks: CarriedChecks | None = None


def build_stages(call: GradeCall, kind: Kind | None, *, baseline_known: bool = True) -> WorkerPart:
    """The worker's part of ``call``'s grade (see :class:`WorkerPart`).

    ``baseline_known``: the baseline is timed for this problem somewhere in the cluster
    already; else it is built here too, so the grader that times it compiles nothing.
    """
    started = time.perf_counter()
    if kind is None:
        return WorkerPart(call.run(), [], time.perf_counter() - started)
    if call.problem.problem_type == "cuda_python":  # no build to ship; the grader does it all
        return WorkerPart(None, [], time.perf_counter() - started)
    boxes = _NotingBoxes(call)
    first = GradeCall(
        call.problem, call.files, call.mode, boxes, None, {**call.options, "benchmark": False}
    )
    verdict = first.run(sanitizer=False)
    if verdict.passed is False or verdict.failure is not None:
        return WorkerPart(verdict, [], time.perf_counter() - started)
    graded = assemble(call.problem, call.files)
    builds = [b for b in [_shipped(call.problem, graded, boxes.toolchains)] if b]
    refs = bool(call.options.get("check_references", True))
    toolchain = boxes.toolchains[0] if boxes.toolchains else ""
    checks = carry(verdict, call.problem, graded, toolchain, check_references=refs)
    base = call.problem.baseline_solution
    if call.timed and base is not None and not baseline_known:
        base_boxes = _NotingBoxes(call)
        base_call = GradeCall(call.problem, [], call.mode, base_boxes, None, {})
        built = base_call.run(base, benchmark=False, check_references=False, sanitizer=False)
        if built.compiled:
            shipped = _shipped(call.problem, assemble(call.problem, base), base_boxes.toolchains)
            builds += [shipped] if shipped else []
    return WorkerPart(None, builds, time.perf_counter() - started, checks)


def install_builds(builds: list[ShippedBuild]) -> int:
    """Put shipped builds into this node's build cache; how many are there now."""
    return sum(import_build(b) for b in builds)


def run_exclusive_stages(
    call: GradeCall,
    *,
    before_s: float = 0.0,
    sandbox_options: Mapping[str, Any] | None = None,
    checks: CarriedChecks | None = None,
) -> Verdict:
    """The grader's part (its device held): ``grade()`` from pristine inputs, taking the
    worker's ``checks`` for the same files instead of rerunning them; the build restores the
    shipped binaries. ``sandbox_options`` replace the call's (a docker grader's ``gpus``)."""
    opts = call.sandbox_options if sandbox_options is None else dict(sandbox_options)
    here = GradeCall(call.problem, call.files, call.mode, call.sandbox, opts, call.options)
    return with_worker_time(here.run(carried=checks), before_s)


def with_worker_time(verdict: Verdict, before_s: float) -> Verdict:
    """The grade's seconds include the worker's part (static checks, build) done before."""
    verdict.seconds = round(verdict.seconds + before_s, 4)
    return verdict


def infrastructure_verdict(call: GradeCall | None, reason: str) -> Verdict:
    """A grade the machinery could not finish: masked (``failure="infrastructure"``), never 0."""
    task = call.problem.task_id if call is not None else "?"
    mode = call.mode if call is not None else "solve"
    return Verdict(task_id=task, mode=mode, passed=None, failure="infrastructure", reason=reason)
