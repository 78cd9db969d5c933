"""A baseline-only timing pass: the one writer of the baseline cache.

Why apart from ``grade``: a grade times the baseline interleaved with a solution, and whatever
the solution left (a busy loop, a loaded GPU) would slow the baseline's rounds; cached, that
inflated baseline would raise the speedup of every later sample of the problem on the machine.
Here no solution runs: the problem's own baseline is built in a fresh sandbox and timed alone
under the device lease, each round after a kill of what the last left, with a new completion
secret per run (a split harness: fresh inputs from its checker per round, the outputs not
checked); the entry records its :class:`~cudaenv.grading.baseline_cache.Provenance`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cudaenv.errors import GradingError
from cudaenv.grading.baseline_cache import BaselineCache, Provenance, baseline_key
from cudaenv.grading.build import SandboxFactory, grading_env, prepare, sandbox_factory
from cudaenv.grading.build_cache import BuildCache
from cudaenv.grading.checker import Checker
from cudaenv.grading.lease import gpu_lease
from cudaenv.grading.profiler.flush import common_flush
from cudaenv.grading.stages import (
    BENCH_SEED_ENV,
    DEFAULT_TIMEOUT_S,
    TOKEN_ENV,
    new_bench_seed,
    new_token,
    uses_completion_token,
)
from cudaenv.grading.timing import measure, timing_device
from cudaenv.grading.timing_stats import summarise
from cudaenv.grading.verdict import Timing
from cudaenv.grading.workspace import assemble
from cudaenv.problems.model import Problem
from cudaenv.toolkit import gpu_info


def time_baseline(
    problem: Problem,
    *,
    sandbox: str | SandboxFactory = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    rounds: int = 5,
    writer: str = "time_baseline",
    cache: BaselineCache | None = None,
) -> Timing:
    """Time ``problem``'s baseline alone and store it in the baseline cache (with provenance).

    Raises :class:`GradingError` when the problem has no baseline or benchmark, no device can
    time it here, or the baseline fails to build or to run.
    """
    p = problem
    if p.baseline_solution is None or not p.benchmark_command:
        raise GradingError(f"{p.task_id}: no baseline_solution or benchmark_command to time")
    gpu = gpu_info()
    device = timing_device(p, gpu)
    if device is None:
        raise GradingError(f"{p.task_id}: no GPU here to time the baseline on")
    timeout = p.timeout_seconds or DEFAULT_TIMEOUT_S
    files = assemble(p, p.baseline_solution)
    factory = sandbox_factory(sandbox, sandbox_options)
    box = factory()
    split = (
        Checker(p, factory, lambda b: grading_env(p, gpu is not None, b), timeout)
        if p.split
        else None
    )
    try:
        if split is not None:
            split.prefetch("perf")  # the first round's inputs, while the baseline builds
        env = grading_env(p, gpu is not None, box)
        built = prepare(box, p, files.all, env, timeout, BuildCache())
        if built.status not in ("ok", "skipped"):
            raise GradingError(f"{p.task_id}: the baseline failed to build: {built.reason}")
        samples: list[float] = []
        flushes: list[int | None] = []
        with gpu_lease(None if gpu else "cpu"):
            for _ in range(max(1, rounds)):
                box.kill_processes()
                token = new_token() if uses_completion_token(p) else None
                run_env = {**env, BENCH_SEED_ENV: new_bench_seed()}
                if split is not None:  # the inputs carry the round's randomness
                    run = split.start("perf")
                    Checker.lay(box, run)
                    run_env = {**env, **run.env}
                if token:
                    run_env[TOKEN_ENV] = token
                m = measure(box, p, env=run_env, timeout=timeout, token=token)
                if m.ms is None:
                    raise GradingError(
                        f"{p.task_id}: the baseline's benchmark {m.stage.status}: {m.stage.reason}"
                    )
                samples.append(m.ms)
                flushes.append(m.l2_flush_bytes)
        timing = summarise(samples, p.timing_mode.type).model_copy(
            update={"l2_flush_bytes": common_flush(flushes)}
        )
        (cache or BaselineCache()).put(
            baseline_key(p, device),
            timing,
            Provenance(
                writer=writer,
                rounds=len(samples),
                device=f"{device.name}/{device.driver}",
                sandbox=box.isolation,
            ),
        )
        return timing
    finally:
        box.close()
        if split is not None:
            split.close()
