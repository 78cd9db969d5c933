"""The Verdict: everything grading found out, as serialisable data."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

StageName = Literal["static", "source_refs", "build", "test", "sanitizer", "benchmark"]
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


class Timing(BaseModel):
    """Benchmark samples in milliseconds and their median / spread."""

    samples_ms: list[float] = Field(default_factory=list)
    median_ms: float | None = None
    spread_ms: float | None = None
    source: str = ""


class Verdict(BaseModel):
    """The result of grading one solution of one problem.

    ``passed`` is None when a stage that decides it could not run here (no GPU), which is
    different from False (the solution failed). ``failure`` says whose fault a failure is:
    "infrastructure" failures must not be used as policy reward signal.
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
