"""Benchmark timing: one measurement per run, interleaved rounds, medians, spread and a CI.

Timings that decide a reward never come from text the solution can print: ``process`` is the
grader's own wall clock; ``region``/``kernels``/``gpu`` come from the CUPTI injection profiler
(its report carries a nonce the program never sees); ``custom`` (the ComputeEval
``COMPUTE_EVAL_TIME_MS`` line) is honoured only for problems that opt in, and is
cross-checked against the wall clock (a forged smaller-than-possible time is flagged).
"""

from __future__ import annotations

import re
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudaenv.errors import GradingError
from cudaenv.grading import gpu_clocks
from cudaenv.grading.profiler import ProfilerLocation
from cudaenv.grading.stages import TOKEN_PREFIX, run_stage
from cudaenv.grading.timing_stats import speedup_ci
from cudaenv.grading.verdict import ClockReading, StageResult, Timing, Verdict
from cudaenv.problems.model import CustomTiming, Problem, ProcessTiming, TimingMode
from cudaenv.sandbox.base import Sandbox
from cudaenv.toolkit import GpuInfo, cpu_identity

CLOCK_TIMINGS = (ProcessTiming, CustomTiming)  # timing modes the grader's clock takes
CUSTOM_LINE = re.compile(r"^COMPUTE_EVAL_TIME_MS:\s*([0-9.]+)\s*$", re.MULTILINE)


@dataclass
class Measurement:
    ms: float | None
    stage: StageResult
    suspected: list[str] = field(default_factory=list)
    l2_flush_bytes: int | None = None  # the grader's L2 flush before the timed ranges


def timing_device(problem: Problem, gpu: GpuInfo | None) -> GpuInfo | None:
    """What times ``problem``'s benchmark here: the GPU, or for a CPU-only problem timed by
    the grader's clock the CPU; None when nothing here can."""
    if gpu is None and problem.cpu_only and isinstance(problem.timing_mode, CLOCK_TIMINGS):
        return cpu_identity()
    return gpu


def parse_custom_ms(stdout: str) -> float | None:
    """The last ``COMPUTE_EVAL_TIME_MS: <ms>`` line, as ComputeEval defines it."""
    found = CUSTOM_LINE.findall(stdout)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


_image_profilers: dict[str, ProfilerLocation] = {}


def sandbox_profiler(sandbox: Sandbox) -> ProfilerLocation:
    """The profiler of a sandbox that brings its own toolchain (an image), asked once per
    toolchain: ``-I`` keeps the workspace (the solution's files) off Python's import path."""
    key = sandbox.toolchain_id
    if key not in _image_profilers:
        res = sandbox.exec("python3 -I -m cudaenv.grading.profiler --where", timeout=900)
        try:
            _image_profilers[key] = ProfilerLocation.model_validate_json(
                res.stdout.strip().splitlines()[-1]
            )
        except (ValueError, IndexError) as exc:
            raise GradingError(
                f"the sandbox's toolchain ({key}) has no usable cudaenv profiler "
                f"(exit {res.exit_code}): {(res.stderr or res.stdout).strip()[-500:]}"
            ) from exc
    return _image_profilers[key]


def profiler_env_for(
    sandbox: Sandbox, out_path: str, nonce: str, mode: TimingMode
) -> dict[str, str]:
    """Host toolchain: the host-built library, copied into the workspace under a random name.
    An image's toolchain: the image's own prebuilt library and libcupti (host paths and a
    host-compiled library would not match the image's CUDA). A ``region`` timing also gets
    the grader's L2 flush before its ranges (``profiler.flush``; ``CUDAENV_L2_FLUSH=0`` off)."""
    from cudaenv.grading.profiler import build_profiler, profiler_env

    if sandbox.toolchain_id != "host":
        found = sandbox_profiler(sandbox)
        return profiler_env(
            out_path, nonce, Path(found.library), found.ld_library_path, timing_mode=mode
        )
    lib_name = f".cudaenv-{secrets.token_hex(8)}.so"
    sandbox.write_file(lib_name, build_profiler().read_bytes())
    return profiler_env(out_path, nonce, Path(f"./{lib_name}"), timing_mode=mode)


def measure(
    sandbox: Sandbox,
    problem: Problem,
    *,
    env: Mapping[str, str],
    timeout: float,
    token: str | None,
) -> Measurement:
    """Run the benchmark command once and return the time its timing mode defines."""
    assert problem.benchmark_command
    mode = problem.timing_mode
    run_env = dict(env)
    prof_name = None
    nonce = None
    if not isinstance(mode, ProcessTiming | CustomTiming):
        prof_name = f".cudaenv-{secrets.token_hex(8)}.json"
        nonce = secrets.token_hex(16)
        run_env.update(profiler_env_for(sandbox, f"./{prof_name}", nonce, mode))
    stage, res = run_stage(
        sandbox, problem.benchmark_command, timeout=timeout, env=run_env, token=token
    )
    if stage.status != "ok":
        return Measurement(None, stage)
    wall_ms = res.duration_s * 1000.0
    if isinstance(mode, ProcessTiming):
        return Measurement(wall_ms, stage)
    if isinstance(mode, CustomTiming):
        # speed: a solution printing its own (smaller) time line, e.g. from a static destructor
        # after the harness's: exactly one line may exist, and it must precede the completion line
        lines = CUSTOM_LINE.findall(res.stdout)
        if len(lines) > 1:
            why = f"{len(lines)} COMPUTE_EVAL_TIME_MS lines (the solution printed its own)"
            stage = stage.model_copy(update={"status": "failed", "reason": why})
            return Measurement(None, stage, [why])
        text = res.stdout.split(f"{TOKEN_PREFIX} {token}")[0] if token else res.stdout
        reported = parse_custom_ms(text)
        if reported is None:
            stage = stage.model_copy(
                update={"status": "failed", "reason": "no COMPUTE_EVAL_TIME_MS line"}
            )
            return Measurement(None, stage)
        if reported > wall_ms * 1.01 + 1.0:
            return Measurement(
                wall_ms,
                stage,
                [f"self-reported time {reported:.3f} ms exceeds the process wall clock"],
            )
        return Measurement(reported, stage)
    from cudaenv.grading.profiler import flushed_bytes, load_profile, time_ms

    try:
        raw = sandbox.read_file(prof_name)  # type: ignore[arg-type]
    except Exception:
        stage = stage.model_copy(
            update={"status": "error", "reason": "the profiler wrote no report"}
        )
        return Measurement(None, stage)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "profile.json"
        path.write_bytes(raw)
        try:
            profile = load_profile(path, nonce)  # type: ignore[arg-type]
        except GradingError as exc:
            stage = stage.model_copy(update={"status": "failed", "reason": str(exc)})
            return Measurement(None, stage, [f"profiler report rejected: {exc}"])
    try:
        ms = time_ms(profile, mode)
    except GradingError as exc:
        stage = stage.model_copy(update={"status": "failed", "reason": f"profile unusable: {exc}"})
        return Measurement(None, stage, [f"profile unusable: {exc}"])
    if ms is None or ms <= 0:
        stage = stage.model_copy(
            update={"status": "failed", "reason": "no timed GPU work in the benchmark region"}
        )
        return Measurement(None, stage, ["benchmark region contains no GPU work"])
    return Measurement(ms, stage, l2_flush_bytes=flushed_bytes(profile))


def record_timings(
    verdict: Verdict,
    solution: list[float],
    baseline: list[float],
    cached: Timing | None,
    source: str,
    solution_clocks: list[ClockReading | None] | None = None,
    baseline_clocks: list[ClockReading | None] | None = None,
    *,
    solution_flush: list[int | None] | None = None,
    baseline_flush: list[int | None] | None = None,
) -> None:
    """The verdict's timings and speedup. The baseline timed beside the solution, where there
    is one, is good for this verdict only and never cached (provenance); else the cached one.
    With the NVML reading of each sample, samples taken on a throttled device are dropped and
    counted (:mod:`cudaenv.grading.gpu_clocks`); medians and the CI use the kept ones. With
    each sample's L2 flush size (``Measurement.l2_flush_bytes``) the timing records the flush
    when every sample had one (``profiler.flush.common_flush``)."""
    from cudaenv.grading.profiler.flush import common_flush

    verdict.solution_timing = gpu_clocks.timing(
        solution,
        solution_clocks or [None] * len(solution),
        source,
        l2_flush_bytes=common_flush(solution_flush or []),
    )
    verdict.solution_ms = verdict.solution_timing.median_ms
    base = cached
    if baseline:
        base = gpu_clocks.timing(
            baseline,
            baseline_clocks or [None] * len(baseline),
            source,
            l2_flush_bytes=common_flush(baseline_flush or []),
        )
    if base is not None and base.median_ms and verdict.solution_ms:
        verdict.baseline_timing = base
        verdict.baseline_ms = base.median_ms
        verdict.speedup = base.median_ms / verdict.solution_ms
        verdict.speedup_ci = speedup_ci(verdict.solution_timing.samples_ms, base.samples_ms)
