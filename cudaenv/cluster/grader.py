"""A grader: the actor that owns one device (a GPU, or a CPU grader's machine slot) and runs
the exclusive grading stages on it, one at a time.

Ray places a GPU grader with ``num_gpus=1`` and sets its ``CUDA_VISIBLE_DEVICES``; the local
sandbox passes that on, and a docker grading sandbox asked for ``gpus`` gets this grader's
device ids instead. Work handed over while another runs installs its shipped builds
(no device needed) and then waits for the device lock, so the device never idles between
two items. Every exclusive interval is recorded (monotonic clock, this host), so the tests
can check that two never overlap and the status can report the busy fraction.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from pydantic import BaseModel, Field

from cudaenv.cluster.artifacts import ShippedBuild
from cudaenv.cluster.baselines import ensure_baseline
from cudaenv.cluster.seam import (
    ExclusiveWork,
    Kind,
    infrastructure_verdict,
    install_builds,
    run_exclusive_stages,
)
from cudaenv.grading.verdict import Verdict

KEEP_INTERVALS = 20_000  # per grader, in the scheduler's record: a long run keeps the latest


class Interval(BaseModel):
    """One exclusive run on a grader: which work, and when it held the device."""

    work: str
    episode: str
    task_id: str
    start: float
    end: float


class GradeOutcome(BaseModel):
    """What a grader hands back: the verdict (None for an empty stage), its interval, how
    the baseline was had, and how many shipped builds it installed (none: it built)."""

    verdict: Verdict | None = None
    interval: Interval | None = None
    grader: str | None = None
    baseline: str | None = None
    installed: int = 0
    tries: int = 0


class GraderInfo(BaseModel):
    name: str
    kind: str
    node_id: str
    pid: int
    gpu_ids: list[str] = Field(default_factory=list)


class GraderStats(BaseModel):
    """A grader's counters: ``busy_s`` of ``up_s`` spent holding its device."""

    name: str
    pid: int
    busy_s: float
    up_s: float
    running: bool
    waiting: int
    graded: int
    first_start: float | None = None
    last_end: float | None = None


def device_options(options: dict[str, Any] | None, gpu_ids: list[str]) -> dict[str, Any] | None:
    """Sandbox options with a requested ``gpus`` narrowed to this grader's devices."""
    if not options or "gpus" not in options or not gpu_ids:
        return options
    return {**options, "gpus": [int(g) if g.isdigit() else g for g in gpu_ids]}


class Grader:
    """The actor body (a threaded actor: ``run`` calls overlap only outside the device lock)."""

    def __init__(self, name: str, kind: Kind, store: Any, baseline_wait_s: float = 300.0) -> None:
        from cudaenv.cluster._ray import ray

        r = ray()
        self.name = name
        self.kind = kind
        self.store = store
        self.baseline_wait_s = baseline_wait_s
        self.gpu_ids = [str(g) for g in r.get_gpu_ids()] if kind == "gpu" else []
        self.node_id = r.get_runtime_context().get_node_id()
        self._device = threading.Lock()
        self._counts = threading.Lock()
        self._born = time.monotonic()
        self._busy = 0.0
        self._waiting = 0
        self._running = False
        self._graded = 0
        self._first: float | None = None  # the first exclusive start and the last end
        self._last: float | None = None

    def info(self) -> GraderInfo:
        return GraderInfo(
            name=self.name,
            kind=self.kind,
            node_id=self.node_id,
            pid=os.getpid(),
            gpu_ids=self.gpu_ids,
        )

    def run(self, work: ExclusiveWork) -> GradeOutcome:
        with self._counts:
            self._waiting += 1
        try:
            installed = install_builds(self._fetch(work.builds))  # outside the device lock
        except Exception:  # an unreadable shipment: the grade builds for itself
            installed = 0
        with self._device:
            with self._counts:
                self._waiting -= 1
                self._running = True
            start = time.monotonic()
            try:
                baseline, verdict = self._exclusive(work)
            except Exception as exc:  # the machinery (the store gone): masked, never scored
                baseline = None
                verdict = infrastructure_verdict(work.call, f"grader {self.name}: {exc}"[:2000])
            end = time.monotonic()
            task = work.problem_key
            interval = Interval(
                work=work.id, episode=work.episode, task_id=task, start=start, end=end
            )
            with self._counts:
                self._running = False
                self._busy += end - start
                self._graded += 1
                self._first = start if self._first is None else self._first
                self._last = end
        return GradeOutcome(
            verdict=verdict,
            interval=interval,
            grader=self.name,
            baseline=baseline,
            installed=installed,
        )

    @staticmethod
    def _fetch(builds: list[Any]) -> list[ShippedBuild]:
        from cudaenv.cluster._ray import ray

        r = ray()
        out = []
        for b in builds:
            if not isinstance(b, ShippedBuild):
                try:
                    b = r.get(b, timeout=120)
                except Exception:  # its worker died meanwhile: build here instead
                    continue
            out.append(b)
        return out

    def _exclusive(self, work: ExclusiveWork) -> tuple[str | None, Verdict | None]:
        call = work.call
        if call is None:
            return None, None
        options = device_options(call.sandbox_options, self.gpu_ids)
        baseline = None
        p = call.problem
        if (
            call.timed
            and p.baseline_solution is not None
            and not call.options.get("force_baseline")
        ):
            from cudaenv.grading.baseline_pass import time_baseline
            from cudaenv.grading.timing import timing_device
            from cudaenv.toolkit import gpu_info

            device = timing_device(p, gpu_info())
            if device is not None:
                rounds = int(call.options.get("rounds", 5))

                def time_it() -> object:
                    return time_baseline(
                        p,
                        sandbox=call.sandbox,
                        sandbox_options=None if callable(call.sandbox) else options,
                        rounds=rounds,
                        writer=f"cudaenv.cluster grader {self.name}",
                    )

                baseline = ensure_baseline(
                    self.store, p, device, self.name, time_it, wait_s=self.baseline_wait_s
                )
        verdict = run_exclusive_stages(
            call, before_s=work.before_s, sandbox_options=options, checks=work.checks
        )
        return baseline, verdict

    def stats(self) -> GraderStats:
        with self._counts:
            return GraderStats(
                name=self.name,
                pid=os.getpid(),
                busy_s=self._busy,
                up_s=time.monotonic() - self._born,
                running=self._running,
                waiting=self._waiting,
                graded=self._graded,
                first_start=self._first,
                last_end=self._last,
            )
