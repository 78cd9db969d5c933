"""The stages after the test, on a grading in progress (``grader._Grading``): the
compute-sanitizer gate and the benchmark's interleaved rounds. Kept apart from the grader's
walk so each stays readable; they use only the grading's public helpers (its sandboxes, build,
checked runs, settle and verdict)."""

from __future__ import annotations

from typing import Any

from cudaenv.grading.baseline_cache import BaselineCache, baseline_key
from cudaenv.grading.checker import CheckedRun, Checker, Stage
from cudaenv.grading.gpu_clocks import ClockSampler
from cudaenv.grading.lease import gpu_lease
from cudaenv.grading.speed_of_light import assess
from cudaenv.grading.stages import BENCH_SEED_ENV, new_bench_seed, run_stage
from cudaenv.grading.timing import Measurement, measure, record_timings, timing_device
from cudaenv.grading.verdict import ClockReading, StageResult
from cudaenv.grading.workspace import assemble
from cudaenv.sandbox import Sandbox


def benchmarks(g: Any) -> bool:
    """Whether :func:`run_benchmark` will time rounds (and so draw their inputs)."""
    p = g.problem
    return bool(g.benchmark and p.benchmark_command and timing_device(p, g.gpu) is not None)


def first_run_after_test(g: Any) -> Stage | None:
    """The stage of the checked run that follows a passed test run (its inputs are drawn
    while the checker decides the test run): a sanitizer tool's, else a benchmark round's."""
    if g.sanitizer and g.gpu is not None:
        return "test"
    return "perf" if benchmarks(g) else None


def run_sanitizer(g: Any, box: Sandbox) -> None:
    """compute-sanitizer over the test run, each tool a checked run of its own (GPU only)."""
    v = g.verdict
    if g.gpu is None:
        v.stages["sanitizer"] = StageResult(status="skipped", reason="no GPU")
        return
    outputs: list[str] = []
    seeds: list[int] = []
    total = 0.0
    for i, tool in enumerate(g.sanitizer):
        after: Stage | None = "test" if i + 1 < len(g.sanitizer) else None
        after = after or ("perf" if benchmarks(g) else None)
        cmd = f"compute-sanitizer --tool {tool} --error-exitcode 86 {g.problem.test_command}"
        token = g.run_token()
        run = g.checked_run(box, "test")
        env = g.test_env(box, token) | (run.env if run else {})
        stage, _ = run_stage(box, cmd, timeout=g.timeout * 10, env=env, token=token)
        if g.settle(box, f"sanitizer run ({tool})", run):  # escape: nothing runs on
            v.stages["sanitizer"] = stage.model_copy(update={"reason": v.reason})
            return
        stage = g.judge(stage, run, after)
        seeds += stage.seeds
        total += stage.seconds
        outputs.append(f"[{tool}] {stage.output_tail[-1000:]}")
        if stage.status != "ok":
            v.stages["sanitizer"] = stage.model_copy(update={"reason": f"{tool}: {stage.reason}"})
            g.fail(f"sanitizer {tool} failed: {stage.reason}")
            return
    v.stages["sanitizer"] = StageResult(
        status="ok", seconds=total, output_tail="\n".join(outputs)[-4000:], seeds=seeds
    )


def _measure(g: Any, box: Sandbox, seed: dict[str, str], run: CheckedRun | None) -> Measurement:
    """One timed run of the benchmark, with a fresh completion secret (or, split, on the
    round's inputs laid in ``box``)."""
    token = g.run_token()
    env = g.test_env(box, token) | seed | (run.env if run else {})
    return measure(box, g.problem, env=env, timeout=g.timeout, token=token)


def run_benchmark(g: Any, box: Sandbox) -> None:
    """Interleaved rounds of the solution and the baseline, each solution round's outputs
    checked; timings, speedup and speed of light recorded on the verdict."""
    v = g.verdict
    p = g.problem
    if not p.benchmark_command:
        v.stages["benchmark"] = StageResult(
            status="skipped", reason="problem has no benchmark_command"
        )
        return
    device = timing_device(p, g.gpu)  # a CPU-only problem's benchmark needs no GPU
    if device is None:
        v.stages["benchmark"] = StageResult(status="skipped", reason="no GPU")
        return
    cache = BaselineCache()
    key = baseline_key(p, device)
    cached = None if g.force_baseline else cache.get(key)
    base_box = None
    if cached is None and p.baseline_solution is not None:
        base_files = assemble(p, p.baseline_solution)
        base_box = g.sandbox()
        built = g.build(base_box, g.env(base_box), base_files.all)
        if built.status not in ("ok", "skipped"):
            base_box = None
            v.reason = "passed; baseline failed to build, no speedup"
    sol: list[float] = []
    base: list[float] = []
    sol_clocks: list[ClockReading | None] = []  # NVML per sample (None: no NVML here)
    base_clocks: list[ClockReading | None] = []
    sol_flush: list[int | None] = []  # the grader's L2 flush per sample (None: none)
    base_flush: list[int | None] = []
    stage: StageResult | None = None
    seeds: list[int] = []
    with gpu_lease(None if g.gpu else "cpu"):
        for n in range(g.rounds):
            # the test run (or the last round) was settled: nothing of the solution is
            # alive, the workspace is the build's (pristine); a fresh secret per run, or
            # (split) fresh inputs, which the baseline's run of the round gets too
            run = g.checked_run(box, "perf")
            seed = {} if run else {BENCH_SEED_ENV: new_bench_seed()}
            with ClockSampler() as clock:
                m = _measure(g, box, seed, run)
            stage = m.stage
            v.suspected_hack.extend(s for s in m.suspected if s not in v.suspected_hack)
            # speed: a process this round left could load the machine during the
            # baseline's timed run; a rewritten file would be timed next round
            if g.settle(box, f"benchmark round {n + 1}", run):
                v.stages["benchmark"] = m.stage.model_copy(
                    update={"status": "failed", "reason": v.reason}
                )
                return
            # every timed run's outputs are checked; the next round's inputs drawn meanwhile
            stage = g.judge(stage, run, "perf" if n + 1 < g.rounds else None)
            if g.checker is not None:
                g.checker.wait()  # no checker work beside the baseline's timed run
            seeds += stage.seeds
            if m.ms is not None and stage.status != "ok":
                v.stages["benchmark"] = stage
                g.fail(f"benchmark round {n + 1}: {stage.reason}")
                return
            if m.ms is None:
                break
            sol.append(m.ms)
            sol_clocks.append(clock.reading)
            sol_flush.append(m.l2_flush_bytes)
            if base_box is not None:
                base_box.kill_processes()
                if run is not None:  # the round's inputs; its outputs are not checked
                    Checker.lay(base_box, run)
                with ClockSampler() as clock:
                    bm = _measure(g, base_box, seed, run)
                if bm.ms is None:
                    base_box = None
                    v.reason = f"passed; baseline benchmark {bm.stage.status}: {bm.stage.reason}"
                    base.clear()
                    base_clocks.clear()
                    base_flush.clear()
                else:
                    base.append(bm.ms)
                    base_clocks.append(clock.reading)
                    base_flush.append(bm.l2_flush_bytes)
    assert stage is not None
    if not sol:
        v.stages["benchmark"] = stage.model_copy(update={"seeds": seeds})
        g.fail(f"benchmark {stage.status}: {stage.reason}")
        return
    where = None if g.gpu else f"timed on the CPU ({device.name})"
    update = {"reason": stage.reason or where, "seeds": seeds}
    v.stages["benchmark"] = stage.model_copy(update=update)
    record_timings(
        v, sol, base, cached, p.timing_mode.type, sol_clocks, base_clocks,
        solution_flush=sol_flush, baseline_flush=base_flush,
    )  # fmt: skip
    assess(v, p, device.name)  # speed of light, physics floor (a device the table knows)


__all__ = ["run_benchmark", "run_sanitizer"]
