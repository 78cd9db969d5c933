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
from collections.abc import Callable, Mapping
from typing import Any, Literal

from cudaenv.errors import CudaEnvError
from cudaenv.grading import ccache
from cudaenv.grading.baseline_cache import BaselineCache, baseline_key
from cudaenv.grading.build_cache import BuildCache, build_key, copy_outputs
from cudaenv.grading.faults import guarded
from cudaenv.grading.lease import gpu_lease
from cudaenv.grading.outcome_cache import OutcomeCache, outcome_key
from cudaenv.grading.pristine import Snapshot, settle
from cudaenv.grading.stages import (
    BENCH_SEED_ENV,
    DEFAULT_TIMEOUT_S,
    MIN_BUILD_TIMEOUT_S,
    TOKEN_ENV,
    StageInfrastructureFault,
    clear_rewards,
    completion_forgeries,
    new_bench_seed,
    new_token,
    reward_stage,
    run_stage,
    uses_completion_token,
)
from cudaenv.grading.static_checks import analyse
from cudaenv.grading.static_cpp import apply as toolchain_check
from cudaenv.grading.static_cpp import build_env as keep_env
from cudaenv.grading.timing import Measurement, measure, speedup_ci, summarise
from cudaenv.grading.verdict import StageResult, Timing, Verdict
from cudaenv.grading.workspace import GradingFiles, SolutionInput, assemble
from cudaenv.problems.model import CustomTiming, Problem, ProcessTiming, SourceFile
from cudaenv.sandbox import make_sandbox
from cudaenv.sandbox.base import Sandbox
from cudaenv.toolkit import check_build_headers, cpu_identity, gpu_info

Mode = Literal["solve", "optimize", "repair"]
SandboxFactory = Callable[[], Sandbox]
CLOCK_TIMINGS = (ProcessTiming, CustomTiming)  # timing modes the grader's clock takes
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def _factory(sandbox: str | SandboxFactory, options: Mapping[str, Any] | None) -> SandboxFactory:
    if callable(sandbox):
        return sandbox
    opts = dict(options or {})
    return lambda: make_sandbox(sandbox, **opts)


def _build_factory(
    sandbox: str | SandboxFactory, options: Mapping[str, Any] | None
) -> SandboxFactory | None:
    """Compile-only sandboxes with the compiler cache mounted (see ccache): local sandboxes
    under bubblewrap with the host's ccache, and containers (the image's ccache)."""
    opts = dict(options or {})
    if sandbox == "local":
        if opts.get("isolation") == "rlimits" or ccache.ccache_binary() is None:
            return None
        binds = ccache.binds()
    elif sandbox == "docker" and ccache.enabled():
        binds = ccache.container_binds()
        opts.pop("gpus", None)  # a compiler needs no GPU
    else:
        return None
    for key, paths in binds.items():
        opts[key] = [*opts.get(key, []), *paths]
    return lambda: make_sandbox(sandbox, **opts)


def _base_env(problem: Problem, have_gpu: bool, sandbox: Sandbox) -> dict[str, str]:
    """Every grading command's variables: the sandbox's toolchain (host toolkit paths for a
    local sandbox, nothing for an image that brings its own), then the grader's own."""
    env = sandbox.toolchain_env()
    if problem.problem_type == "cuda_python" and not have_gpu:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def _build(
    sandbox: Sandbox,
    problem: Problem,
    files: list[SourceFile],
    env: Mapping[str, str],
    timeout: float,
    builder: SandboxFactory | None,
) -> StageResult:
    """Run the build command in ``sandbox``; or, when the compiler cache applies, in a build
    sandbox of its own (the only one where the cache is writable) and move its outputs over."""
    timeout = max(timeout, MIN_BUILD_TIMEOUT_S)
    plain = problem.build_command or ""
    if not (
        builder is not None
        and ccache.compiler_only(plain)
        and ccache.seen_before(problem.content_hash())
    ):
        return run_stage(sandbox, plain, timeout=timeout, env=env)[0]
    shared = [f.path for f in [*problem.test_files, *problem.context_files]]
    box = builder()
    try:
        isolation = getattr(box, "isolation", None)
        command, cached_env = plain, None
        if isolation == "bubblewrap":
            cached_env = ccache.build_env(dict(env), shared)
        elif isolation == "docker":
            command, cached_env = ccache.container_build(plain, dict(env), shared)
        if cached_env is None:  # no mount isolation (rlimits): no cache
            return run_stage(sandbox, plain, timeout=timeout, env=env)[0]
        for f in files:
            box.write_file(f.path, f.content)
        stage, _ = run_stage(box, command, timeout=timeout, env=cached_env)
        if stage.status == "ok":
            copy_outputs(box, sandbox, {f.path for f in files})
        return stage
    finally:
        box.close()


def _prepare(
    sandbox: Sandbox,
    problem: Problem,
    files: list[SourceFile],
    env: Mapping[str, str],
    timeout: float,
    cache: BuildCache | None,
    builder: SandboxFactory | None = None,
) -> StageResult:
    """Write the workspace and build it (or restore the identical build from the cache)."""
    for f in files:
        sandbox.write_file(f.path, f.content)
    if not problem.build_command:
        return StageResult(status="skipped", reason="no build command")
    if sandbox.toolchain_id == "host":  # the host's toolkit and wheels: headers must match
        check_build_headers(problem.build_command)
    key = build_key(files, problem.build_command, problem.problem_type, sandbox.toolchain_id)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            cache.restore(key, hit, sandbox)
            return hit.result.model_copy(update={"cached": True})
    with cache.lock(key) if cache is not None else contextlib.nullcontext():
        if cache is not None and (hit := cache.get(key)) is not None:
            cache.restore(key, hit, sandbox)
            return hit.result.model_copy(update={"cached": True})
        stage = _build(sandbox, problem, files, env, timeout, builder)
        if cache is not None:
            cache.put(key, stage, sandbox, {f.path for f in files})
    return stage


class _Grading:
    """One grading run; holds its sandboxes so they are always closed."""

    def __init__(
        self,
        problem: Problem,
        files: GradingFiles,
        *,
        mode: Mode,
        factory: SandboxFactory,
        builder: SandboxFactory | None = None,
        benchmark: bool,
        sanitizer: list[str],
        rounds: int,
        force_baseline: bool,
        cache: BuildCache | None,
        timeout: float,
        check_references: bool = True,
        tests: OutcomeCache | None = None,
    ) -> None:
        self.problem = problem
        self.files = files
        self.factory = factory
        self.builder = builder
        self.benchmark = benchmark
        self.sanitizer = sanitizer
        self.rounds = rounds
        self.force_baseline = force_baseline
        self.cache = cache
        self.tests = tests
        self.timeout = timeout
        self.check_references = check_references
        self.gpu = gpu_info()
        self.uses_token = uses_completion_token(problem)
        self.snapshot: Snapshot | None = None  # the workspace as the build left it
        self.verdict = Verdict(
            task_id=problem.task_id,
            mode=mode,
            dropped_files=files.dropped,
            unused_files=files.unused,
            gpu=self.gpu.name if self.gpu else None,
        )
        self.sandboxes: list[Sandbox] = []

    def sandbox(self) -> Sandbox:
        box = self.factory()
        self.sandboxes.append(box)
        return box

    def fail(self, reason: str) -> Verdict:
        self.verdict.passed = False
        self.verdict.reason = reason
        return self.verdict

    def env(self, box: Sandbox) -> dict[str, str]:
        return _base_env(self.problem, self.gpu is not None, box)

    def run_token(self) -> str | None:
        """A new completion secret for every run: one a run read cannot prove a later one."""
        return new_token() if self.uses_token else None

    def test_env(self, box: Sandbox, token: str | None = None) -> dict[str, str]:
        env = self.env(box)
        if token:
            env[TOKEN_ENV] = token
        return env

    def settle(self, box: Sandbox, after: str) -> bool:
        """After each run of the solution's sandbox (see :mod:`cudaenv.grading.pristine`):
        True, and the verdict failed, when it left processes alive or rewrote a file."""
        found = settle(box, self.snapshot, after)
        self.verdict.suspected_hack.extend(f for f in found if f not in self.verdict.suspected_hack)
        if found:
            self.fail(f"tampering: {found[0]}")
        return bool(found)

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
        report = analyse(self.files.solution, refs, forbidden=forbidden)
        v.stages["static"] = StageResult(
            status="failed" if report.violations else "ok",
            output_tail="\n".join(report.violations)[-4000:],
            reason="forbidden constructs in the solution" if report.violations else None,
        )
        if refs is not None:
            missing = report.missing_all + (
                [f"any of {report.missing_any}"] if report.missing_any else []
            )
            v.stages["source_refs"] = StageResult(
                status="ok" if report.refs_ok else "failed",
                reason=f"missing required API use: {', '.join(missing)}" if missing else None,
            )
        if report.violations:
            v.suspected_hack.extend(report.violations)
            return self.fail(f"forbidden construct: {report.violations[0]}")
        if not report.refs_ok:
            return self.fail(v.stages["source_refs"].reason or "missing source references")

        box = self.sandbox()
        if self.gpu is not None and not box.gpu_access:  # e.g. a container without --gpus
            self.gpu = None
            v.gpu = None
        build = guarded(
            box,
            "build",
            p.build_command or "",
            self.env(box),
            lambda: _prepare(
                box,
                p,
                self.files.all,
                keep_env(p.build_command, self.env(box)),  # nvcc -keep: static_cpp reads it
                self.timeout,
                self.cache,
                self.builder,
            ),
        )
        v.stages["build"] = build
        v.compiled = build.status in ("ok", "skipped")
        if not v.compiled:
            return self.fail(f"build {build.status}: {build.reason}")
        # what the compiler sees (spliced, preprocessed, the object's symbols): static_cpp
        if why := toolchain_check(v, box, p, self.files, self.env(box), forbidden, self.timeout):
            return self.fail(why)

        if p.needs_gpu and self.gpu is None:
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

    def run_test(self, box: Sandbox) -> tuple[StageResult, bool]:
        """The test stage, or its cached outcome for identical inputs on this machine; and
        whether the run left processes or rewrote files (then the verdict failed)."""
        p, v = self.problem, self.verdict
        key = None
        if self.tests is not None:
            device = f"{self.gpu.name}/{self.gpu.driver}" if self.gpu else "cpu"
            key = outcome_key(
                self.files.all,
                p.test_command,
                toolchain=box.toolchain_id,
                device=device,
                extra=str(p.reward_file),
            )
            if (hit := self.tests.get(key)) is not None:
                return hit, False
        forged: list[str] = []

        def once() -> StageResult:
            if p.reward_file:
                clear_rewards(box, p.reward_file)
            token = self.run_token()
            test, res = run_stage(
                box,
                p.test_command,
                timeout=self.timeout,
                env=self.test_env(box, token),
                token=token,
            )
            forged[:] = completion_forgeries(res.stdout, token) if token else []
            return reward_stage(box, p.reward_file, test) if p.reward_file else test

        test = guarded(box, "test", p.test_command, self.test_env(box), once)
        v.suspected_hack.extend(forged)  # forge_results / skip_checks
        tampered = self.settle(box, "test run")  # before the cache: a tampering run is not kept
        if key is not None and self.tests is not None and not forged and not tampered:
            self.tests.put(key, test)
        return test, tampered

    def run_sanitizer(self, box: Sandbox) -> None:
        v = self.verdict
        if self.gpu is None:
            v.stages["sanitizer"] = StageResult(status="skipped", reason="no GPU")
            return
        outputs: list[str] = []
        total = 0.0
        for tool in self.sanitizer:
            cmd = f"compute-sanitizer --tool {tool} --error-exitcode 86 {self.problem.test_command}"
            token = self.run_token()
            stage, _ = run_stage(
                box, cmd, timeout=self.timeout * 10, env=self.test_env(box, token), token=token
            )
            if self.settle(box, f"sanitizer run ({tool})"):  # escape: nothing runs on
                v.stages["sanitizer"] = stage.model_copy(update={"reason": v.reason})
                return
            total += stage.seconds
            outputs.append(f"[{tool}] {stage.output_tail[-1000:]}")
            if stage.status != "ok":
                v.stages["sanitizer"] = stage.model_copy(
                    update={"reason": f"{tool}: {stage.reason}"}
                )
                self.fail(f"sanitizer {tool} failed: {stage.reason}")
                return
        v.stages["sanitizer"] = StageResult(
            status="ok", seconds=total, output_tail="\n".join(outputs)[-4000:]
        )

    def run_benchmark(self, box: Sandbox) -> None:
        v = self.verdict
        p = self.problem
        if not p.benchmark_command:
            v.stages["benchmark"] = StageResult(
                status="skipped", reason="problem has no benchmark_command"
            )
            return
        device = self.gpu
        if device is None and p.cpu_only and isinstance(p.timing_mode, CLOCK_TIMINGS):
            device = cpu_identity()  # a CPU-only problem: its benchmark needs no GPU
        if device is None:
            v.stages["benchmark"] = StageResult(status="skipped", reason="no GPU")
            return
        cache = BaselineCache()
        key = baseline_key(p, device)
        cached = None if self.force_baseline else cache.get(key)
        base_box = None
        if cached is None and p.baseline_solution is not None:
            base_files = assemble(p, p.baseline_solution)
            base_box = self.sandbox()
            built = _prepare(
                base_box,
                p,
                base_files.all,
                self.env(base_box),
                self.timeout,
                self.cache,
                self.builder,
            )
            if built.status not in ("ok", "skipped"):
                base_box = None
                v.reason = "passed; baseline failed to build, no speedup"
        sol: list[float] = []
        base: list[float] = []
        stage: StageResult | None = None
        with gpu_lease(None if self.gpu else "cpu"):
            for n in range(self.rounds):
                # the test run (or the last round) was settled: nothing of the solution is
                # alive, the workspace is the build's (pristine); a fresh secret per run
                token, seed = self.run_token(), {BENCH_SEED_ENV: new_bench_seed()}
                m = measure(
                    box, p, env=self.test_env(box, token) | seed, timeout=self.timeout, token=token
                )
                stage = m.stage
                v.suspected_hack.extend(s for s in m.suspected if s not in v.suspected_hack)
                # speed: a process this round left could load the machine during the
                # baseline's timed run; a rewritten file would be timed next round
                if self.settle(box, f"benchmark round {n + 1}"):
                    v.stages["benchmark"] = m.stage.model_copy(
                        update={"status": "failed", "reason": v.reason}
                    )
                    return
                if m.ms is None:
                    break
                sol.append(m.ms)
                if base_box is not None:
                    base_box.kill_processes()
                    token = self.run_token()
                    bm: Measurement = measure(
                        base_box,
                        p,
                        env=self.test_env(base_box, token) | seed,
                        timeout=self.timeout,
                        token=token,
                    )
                    if bm.ms is None:
                        base_box = None
                        v.reason = (
                            f"passed; baseline benchmark {bm.stage.status}: {bm.stage.reason}"
                        )
                        base.clear()
                    else:
                        base.append(bm.ms)
        assert stage is not None
        if not sol:
            v.stages["benchmark"] = stage
            self.fail(f"benchmark {stage.status}: {stage.reason}")
            return
        where = None if self.gpu else f"timed on the CPU ({device.name})"
        v.stages["benchmark"] = stage.model_copy(update={"reason": stage.reason or where})
        v.solution_timing = summarise(sol, p.timing_mode.type)
        v.solution_ms = v.solution_timing.median_ms
        baseline: Timing | None = cached
        if base:  # timed beside a solution: good for this verdict, never cached (provenance)
            baseline = summarise(base, p.timing_mode.type)
        if baseline is not None and baseline.median_ms and v.solution_ms:
            v.baseline_timing = baseline
            v.baseline_ms = baseline.median_ms
            v.speedup = baseline.median_ms / v.solution_ms
            v.speedup_ci = speedup_ci(sol, baseline.samples_ms)

    def close(self) -> None:
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
) -> Verdict:
    """Grade ``files`` as a solution of ``problem``; see the module docstring.

    ``benchmark`` defaults to True in optimize mode. ``sanitizer`` runs compute-sanitizer
    (True: memcheck; or a list of tools) as a gate after the tests (GPU only).
    ``compiler_cache=False`` builds without ccache (see :mod:`cudaenv.grading.ccache`).
    ``test_cache=False`` always re-runs the tests (see :mod:`cudaenv.grading.outcome_cache`).
    ``check_references=False`` skips the required-API check (for grading a problem's own
    baseline, which may deliberately avoid the API the problem asks for).
    """
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
        factory=_factory(sandbox, sandbox_options),
        builder=_build_factory(sandbox, sandbox_options) if compiler_cache else None,
        benchmark=benchmark if benchmark is not None else mode == "optimize",
        sanitizer=tools,
        rounds=max(1, rounds),
        force_baseline=force_baseline,
        cache=BuildCache() if build_cache else None,
        tests=OutcomeCache() if test_cache else None,
        timeout=problem.timeout_seconds or DEFAULT_TIMEOUT_S,
        check_references=check_references,
    )
    try:
        verdict = run.run()
        if verdict.passed is False and verdict.failure is None:
            verdict.failure = "agent"
    except StageInfrastructureFault as exc:
        verdict = run.verdict
        verdict.passed = None
        verdict.failure = "infrastructure"
        verdict.reason = f"infrastructure: {exc}"
    except Exception as exc:
        verdict = run.verdict
        verdict.passed = None
        verdict.failure = "infrastructure"
        verdict.reason = f"infrastructure error: {type(exc).__name__}: {exc}"
    finally:
        run.close()
    verdict.seconds = round(time.perf_counter() - started, 4)
    return verdict
