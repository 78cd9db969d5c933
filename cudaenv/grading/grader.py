"""``grade(problem, files) -> Verdict``: a pure function of its inputs.

Every call grades in FRESH sandboxes built from the pristine problem plus the solution's
files, never in the agent's workspace (this stops every "edit the tests / harness / build
files in the live workspace" exploit). Exceptions never escape: a failure of the machinery
becomes a Verdict with ``failure="infrastructure"``, which RL loops must mask out rather than
score as the policy's fault.

Whose fault a failure is (an outside kill, a missing interpreter): :mod:`cudaenv.grading.faults`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cudaenv.errors import CudaEnvError
from cudaenv.grading import post_test
from cudaenv.grading.build import (
    BUILD_TAMPERED,
    SandboxFactory,
    grading_env,
    prepare,
    sandbox_factory,
)
from cudaenv.grading.build_cache import BuildCache
from cudaenv.grading.carried import STATIC_STAGES, TOOLCHAIN_STAGES, CarriedChecks, checks_key, take
from cudaenv.grading.checker import CheckedRun, Checker, Stage, checker_digest, imitations
from cudaenv.grading.device_code import fixed_precision, narrow_python_names
from cudaenv.grading.faults import guarded
from cudaenv.grading.gpu_work import watch
from cudaenv.grading.outcome_cache import OutcomeCache, outcome_key
from cudaenv.grading.pristine import Snapshot, settle
from cudaenv.grading.repo_grader import grade_repository
from cudaenv.grading.reward_files import clear_rewards, reward_stage
from cudaenv.grading.stages import (
    DEFAULT_TIMEOUT_S,
    TOKEN_ENV,
    StageInfrastructureFault,
    completion_forgeries,
    new_token,
    run_stage,
    uses_completion_token,
)
from cudaenv.grading.static_checks import static_stage
from cudaenv.grading.static_cpp import apply as toolchain_check
from cudaenv.grading.static_cpp import build_env as keep_env
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.grading.workspace import GradingFiles, SolutionInput, assemble
from cudaenv.problems.model import Mode, Problem, SourceFile
from cudaenv.sandbox import Sandbox
from cudaenv.toolkit import gpu_info

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


@dataclass(eq=False)
class _Grading:
    """One grading run; holds its sandboxes so they are always closed."""

    problem: Problem
    files: GradingFiles
    mode: Mode
    factory: SandboxFactory
    benchmark: bool
    sanitizer: list[str]
    rounds: int
    force_baseline: bool
    cache: BuildCache | None
    timeout: float
    check_references: bool = True
    tests: OutcomeCache | None = None
    compiler_cache: bool = True
    carried: CarriedChecks | None = None  # checks another grade ran on these inputs
    sandboxes: list[Sandbox] = field(default_factory=list)
    snapshot: Snapshot | None = None  # the workspace as the build left it
    fresh: bool = True  # every sandbox the factory gave was fresh: outcomes may be cached
    checker: Checker | None = None  # a split harness's trusted checker (its own sandbox)

    def __post_init__(self) -> None:
        self.gpu = gpu_info()
        self.uses_token = uses_completion_token(self.problem)
        self.key = (
            checks_key(self.problem, self.files, self.check_references) if self.carried else ""
        )
        self.verdict = Verdict(
            task_id=self.problem.task_id,
            mode=self.mode,
            dropped_files=self.files.dropped,
            unused_files=self.files.unused,
            gpu=self.gpu.name if self.gpu else None,
        )

    def sandbox(self) -> Sandbox:
        box = self.factory()
        self.sandboxes.append(box)
        self.fresh = self.fresh and box.fresh  # asked before anything runs in it
        return box

    def fail(self, reason: str) -> Verdict:
        self.verdict.passed = False
        self.verdict.reason = reason
        return self.verdict

    def env(self, box: Sandbox) -> dict[str, str]:
        return grading_env(self.problem, self.gpu is not None, box)

    def run_token(self) -> str | None:
        """A new completion secret for every run: one a run read cannot prove a later one."""
        return new_token() if self.uses_token else None

    def test_env(self, box: Sandbox, token: str | None = None) -> dict[str, str]:
        env = self.env(box)
        if token:
            env[TOKEN_ENV] = token
        return env

    def settle(self, box: Sandbox, after: str, run: CheckedRun | None = None) -> bool:
        """After each run of the solution's sandbox (see :mod:`cudaenv.grading.pristine`):
        True, and the verdict failed, when it left processes alive or rewrote a file. A split
        run's outputs are collected once its processes are dead, before the re-lay."""
        between = (lambda: Checker.collect(box, run)) if run is not None else None
        found = settle(box, self.snapshot, after, between)
        self.verdict.suspected_hack.extend(f for f in found if f not in self.verdict.suspected_hack)
        if found:
            self.fail(f"tampering: {found[0]}")
        return bool(found)

    def checked_run(self, box: Sandbox, stage: Stage, profiled: bool = False) -> CheckedRun | None:
        """A split problem's next run, its fresh inputs laid in ``box``; None for others.
        ``profiled``: on a GPU, the profiler watches each call (:mod:`.gpu_work`)."""
        if self.checker is None:
            return None
        run = self.checker.start(stage)
        self.checker.lay(box, run)
        if profiled and self.gpu is not None:
            run.watch, run.watch_env = watch(box)
        return run

    def judge(
        self, stage: StageResult, run: CheckedRun | None, ahead: Stage | None = None
    ) -> StageResult:
        """The checker's verdict on a settled run; ``ahead``: the next run's stage, whose
        inputs are drawn while it decides (:meth:`Checker.judge`)."""
        if run is None or self.checker is None:
            return stage
        return self.checker.judge(stage, run, ahead)

    def build(
        self, box: Sandbox, env: dict[str, str], files: list[SourceFile] | None = None
    ) -> StageResult:
        """The build stage in ``box`` (:func:`cudaenv.grading.build.prepare`): the graded
        files, or ``files`` (the baseline's)."""
        p, cache, ccache = self.problem, self.cache, self.compiler_cache
        files = self.files.all if files is None else files
        return prepare(box, p, files, env, self.timeout, cache, compiler_cache=ccache)

    def run(self) -> Verdict:
        v = self.verdict
        p = self.problem
        if self.files.rejected:
            v.suspected_hack.append(f"unsafe solution paths rejected: {self.files.rejected}")
        # change_graded / forge_results: files dropped because they could change what is graded
        v.suspected_hack.extend(self.files.suspicious)
        if not self.files.solution:
            v.stages["static"] = StageResult(status="failed", reason="no solution files")
            why = "only protected files" if self.files.dropped else "empty solution"
            return self.fail(f"no gradable solution files ({why})")
        refs = p.source_references if self.check_references else None
        # a baseline (check_references=False) may use what solutions may not
        forbidden = p.forbidden_references if self.check_references else []
        if self.check_references:  # Python kernels keep the precision the problem fixes
            forbidden = [*forbidden, *narrow_python_names(fixed_precision(p))]
        context = [f.path for f in p.context_files]
        if not take(v, self.carried, self.key, STATIC_STAGES) and (
            why := static_stage(
                v, self.files.solution, refs, forbidden, policy=p.policy_in_force, context=context
            )
        ):
            return self.fail(why)

        box = self.sandbox()
        if self.gpu is not None and not box.gpu_access:  # e.g. a container without --gpus
            self.gpu = None
            v.gpu = None
        if p.split and (self.gpu is not None or not p.needs_gpu):  # the device is known now
            self.checker = Checker(p, self.sandbox, self.env, self.timeout)
            key = self.test_key(box)  # no draw for a test whose outcome is cached
            if key is None or self.tests is None or self.tests.get(key) is None:
                self.checker.prefetch("test")  # its sandbox and inputs, during the build
        keep = keep_env(p.build_command, self.env(box))  # nvcc -keep: static_cpp reads it
        build = guarded(
            box, "build", p.build_command or "", self.env(box), lambda: self.build(box, keep)
        )
        v.stages["build"] = build
        if (build.reason or "").startswith(BUILD_TAMPERED):  # change_graded, from the build
            v.suspected_hack.append(build.reason or "")
        v.compiled = build.status in ("ok", "skipped")
        if not v.compiled:
            return self.fail(f"build {build.status}: {build.reason}")
        # what the compiler sees (spliced, preprocessed, the object's symbols): static_cpp
        if not take(v, self.carried, self.key, TOOLCHAIN_STAGES, box.toolchain_id) and (
            why := toolchain_check(v, box, p, self.files, self.env(box), forbidden, self.timeout)
        ):
            return self.fail(why)

        # a policy without the simulator runs Python problems' tests on a GPU only (cuTile)
        if (p.needs_gpu or not p.policy_in_force.simulator) and self.gpu is None:
            v.stages["test"] = StageResult(status="skipped", reason="no GPU")
            v.passed = None
            v.reason = "compiled; GPU stages skipped (no GPU)"
            return v
        self.snapshot = Snapshot.take(box, {f.path for f in self.files.all})
        test, tampered = self.run_test(box)
        if self.gpu is None and p.problem_type == "cuda_python":
            test = test.model_copy(
                update={"reason": ((test.reason or "") + " [numba-cuda simulator]").strip()}
            )
        v.stages["test"] = test
        if tampered:  # change_graded: a rewritten test.out, a leftover process
            return v
        if test.status != "ok":
            return self.fail(f"test {test.status}: {test.reason}")
        v.passed = True
        v.reason = "passed"

        if self.sanitizer:
            self.run_sanitizer(box)
            if v.passed is False:
                return v
        if self.benchmark:
            self.run_benchmark(box)
        return v

    def test_key(self, box: Sandbox) -> str | None:
        """The test outcome's cache key (None: no outcome cache)."""
        if self.tests is None:
            return None
        device = f"{self.gpu.name}/{self.gpu.driver}" if self.gpu else "cpu"
        extra = str(self.problem.reward_file) + checker_digest(self.problem)
        toolchain = box.toolchain_id
        return outcome_key(
            self.files.all,
            self.problem.test_command,
            toolchain=toolchain,
            device=device,
            extra=extra,
        )

    def run_test(self, box: Sandbox) -> tuple[StageResult, bool]:
        """The test stage, or its cached outcome for identical inputs on this machine; and
        whether the run left processes or rewrote files (then the verdict failed)."""
        p, v = self.problem, self.verdict
        key = self.test_key(box)
        if key is not None and self.tests is not None and (hit := self.tests.get(key)):
            return hit, False
        forged: list[str] = []
        runs: list[CheckedRun] = []  # the split run of the last attempt
        rewrote: list[bool] = []

        def once() -> StageResult:
            if p.reward_file:
                clear_rewards(box, p.reward_file)
            token = self.run_token()
            runs[:] = [run] if (run := self.checked_run(box, "test", profiled=True)) else []
            test, res = run_stage(
                box,
                p.test_command,
                timeout=self.timeout,
                env=self.test_env(box, token) | (run.env if run else {}),
                token=token,
            )
            forged[:] = completion_forgeries(res.stdout, token) if token else []
            forged.extend(imitations(res.stdout) if run else [])
            return reward_stage(box, p.reward_file, test) if p.reward_file else test

        def relay() -> str | None:  # before a retry: a re-laid workspace, or no retry
            rewrote.append(self.settle(box, "test run (killed from outside)"))
            return v.reason if rewrote[-1] else None

        test = guarded(box, "test", p.test_command, self.test_env(box), once, relay)
        v.suspected_hack.extend(forged)  # forge_results / skip_checks
        # before the cache: a tampering run is not kept
        tampered = self.settle(box, "test run", runs[0] if runs else None) or any(rewrote)
        if runs and not tampered:
            test = self.judge(test, runs[0], post_test.first_run_after_test(self))
        # only a run in a sandbox nothing ran in before is trusted for later gradings
        if key is not None and self.tests is not None and self.fresh and not (forged or tampered):
            self.tests.put(key, test)
        return test, tampered

    def run_sanitizer(self, box: Sandbox) -> None:
        post_test.run_sanitizer(self, box)

    def run_benchmark(self, box: Sandbox) -> None:
        post_test.run_benchmark(self, box)

    def close(self) -> None:
        if self.checker is not None:
            self.checker.close()  # stops a draw still running (its inputs are not wanted)
        for box in self.sandboxes:
            with contextlib.suppress(Exception):
                box.close()


def grade(
    problem: Problem,
    files: SolutionInput,
    *,
    mode: Mode = "solve",
    sandbox: str | SandboxFactory = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    benchmark: bool | None = None,
    sanitizer: bool | list[str] = False,
    rounds: int = 5,
    force_baseline: bool = False,
    build_cache: bool = True,
    check_references: bool = True,
    test_cache: bool = True,
    compiler_cache: bool = True,
    carried: CarriedChecks | None = None,
) -> Verdict:
    """Grade ``files`` as a solution of ``problem``; see the module docstring.

    ``benchmark`` defaults to True in optimize mode. ``sanitizer`` runs compute-sanitizer
    (True: memcheck; or a list of tools) as a gate after the tests (GPU only).
    ``compiler_cache=False`` builds without ccache (see :mod:`cudaenv.grading.ccache`).
    ``test_cache=False`` always re-runs the tests (see :mod:`cudaenv.grading.outcome_cache`).
    ``check_references=False`` skips the required-API check (for grading a problem's own
    baseline, which may deliberately avoid the API the problem asks for).
    ``carried``: check stages another grade ran on the same inputs (:mod:`cudaenv.grading.carried`).
    """
    if problem.repository is not None:  # its own recipe: cudaenv.grading.repo_grader
        return grade_repository(
            problem,
            files,
            mode=mode,
            sandbox=sandbox,
            sandbox_options=sandbox_options,
            compiler_cache=compiler_cache,
        )
    started = time.perf_counter()
    tools = list(SANITIZER_TOOLS[:1]) if sanitizer is True else list(sanitizer or [])
    try:
        gathered = assemble(problem, files)
    except CudaEnvError as exc:
        return Verdict(
            task_id=problem.task_id, mode=mode, passed=False, reason=str(exc), failure="agent"
        )
    run = _Grading(
        problem,
        gathered,
        mode=mode,
        factory=sandbox_factory(sandbox, sandbox_options),
        compiler_cache=compiler_cache,
        benchmark=benchmark if benchmark is not None else mode == "optimize",
        sanitizer=tools,
        rounds=max(1, rounds),
        force_baseline=force_baseline,
        cache=BuildCache() if build_cache else None,
        tests=OutcomeCache() if test_cache else None,
        timeout=problem.timeout_seconds or DEFAULT_TIMEOUT_S,
        check_references=check_references,
        carried=carried,
    )
    try:
        verdict = run.run()
        if verdict.passed is False and verdict.failure is None:
            verdict.failure = "agent"
    except Exception as exc:  # the machinery's failure: masked, never scored
        verdict = run.verdict
        verdict.passed = None
        verdict.failure = "infrastructure"
        verdict.reason = (
            f"infrastructure: {exc}"
            if isinstance(exc, StageInfrastructureFault)
            else f"infrastructure error: {type(exc).__name__}: {exc}"
        )
    finally:
        run.close()
    verdict.seconds = round(time.perf_counter() - started, 4)
    return verdict
