"""The Verdict: everything grading found out, as serialisable data."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

StageStatus = Literal["ok", "failed", "timeout", "skipped", "error"]
FailureKind = Literal["agent", "infrastructure"]


class StageResult(BaseModel):
    """One stage: its status, exit code, the tail of its output, and how long it took."""

    model_config = ConfigDict(extra="forbid")

    status: StageStatus
    exit_code: int | None = None
    seconds: float = 0.0
    output_tail: str = ""
    reason: str | None = None
    cached: bool = False
    # split harnesses: the checker's seed of each run in the stage (a failure reproduces)
    seeds: list[int] = Field(default_factory=list)


class ClockReading(BaseModel):
    """What NVML saw while one sample ran (``grading/gpu_clocks.py``): the lowest and highest
    SM clock, the lowest memory clock, the hottest temperature and every throttle reason."""

    model_config = ConfigDict(extra="forbid")

    sm_mhz_min: int | None = None
    sm_mhz_max: int | None = None
    mem_mhz_min: int | None = None
    temp_c_max: int | None = None
    throttle_reasons: int = 0  # NVML clocksEventReasons bits, OR over the run (idle left out)
    polls: int = 0


class Timing(BaseModel):
    """Benchmark samples in milliseconds and their median / spread.

    ``clocks`` holds one reading per sample taken (None where NVML could not be read), the
    dropped ones included; ``throttled_dropped`` counts the samples left out of
    ``samples_ms`` because their device was throttled; ``l2_flush_bytes`` is the size of the
    grader's L2 flush before each timed region (None: no flush).
    """

    samples_ms: list[float] = Field(default_factory=list)
    median_ms: float | None = None
    spread_ms: float | None = None
    source: str = ""
    clocks: list[ClockReading | None] = Field(default_factory=list)
    throttled_dropped: int = 0
    all_throttled: bool = False
    l2_flush_bytes: int | None = None


class Verdict(BaseModel):
    """The result of grading one solution of one problem.

    ``passed`` is None when a stage that decides it could not run here (no GPU), which is
    different from False (the solution failed). ``failure`` says whose fault a failure is:
    "infrastructure" failures must not be used as policy reward signal. ``sol_ms`` and
    ``sol_fraction`` come from the problem's ``metadata.work`` and the device's peaks
    (``grading/speed_of_light.py``); None where either is unknown.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    mode: str = "solve"
    compiled: bool = False
    passed: bool | None = None
    stages: dict[str, StageResult] = Field(default_factory=dict)
    solution_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    sol_ms: float | None = None  # speed of light of the benchmark on this device
    sol_fraction: float | None = None  # sol_ms / solution_ms: 1.0 is the hardware's limit
    sol_device: str | None = None  # the peak-table entry sol_ms used
    solution_timing: Timing | None = None
    baseline_timing: Timing | None = None
    dropped_files: list[str] = Field(default_factory=list)
    unused_files: list[str] = Field(default_factory=list)
    suspected_hack: list[str] = Field(default_factory=list)
    reason: str = ""
    failure: FailureKind | None = None
    gpu: str | None = None
    seconds: float = 0.0

    @property
    def infrastructure_failure(self) -> bool:
        return self.failure == "infrastructure"
