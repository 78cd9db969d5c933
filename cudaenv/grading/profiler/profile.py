"""The profiler's output document, and reading it back: authenticated by the run's nonce."""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cudaenv.errors import GradingError

MAX_PROFILE_BYTES = 64 << 20


class KernelRecord(BaseModel):
    """One kernel execution, or (``count`` > 1, no timestamps) all runs of one kernel."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    mangled: str | None = None
    start_ns: int | None = Field(default=None, ge=0)
    end_ns: int | None = Field(default=None, ge=0)
    launch_ns: int | None = Field(default=None, ge=0)
    count: int = Field(default=1, ge=0)
    total_ns: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _total_from_span(cls, data: Any) -> Any:
        if isinstance(data, dict) and "total_ns" not in data:
            start, end = data.get("start_ns"), data.get("end_ns")
            if isinstance(start, int) and isinstance(end, int):
                data = {**data, "total_ns": max(end - start, 0)}
        return data

    @model_validator(mode="after")
    def _ordered(self) -> KernelRecord:
        if self.start_ns is not None and self.end_ns is not None and self.end_ns < self.start_ns:
            raise ValueError("kernel ends before it starts")
        return self


class MemcpyRecord(BaseModel):
    """All copies (or memsets, kind ``memset``) of one kind."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kind: str
    count: int = Field(default=0, ge=0)
    total_ns: int = Field(default=0, ge=0)
    bytes: int = Field(default=0, ge=0)


class RangeRecord(BaseModel):
    """One NVTX range (``count`` 1), or all ranges of one name when the profile aggregated them."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    start_ns: int = Field(ge=0)
    end_ns: int = Field(ge=0)
    wall_ns: int | None = Field(default=None, ge=0)
    kernel_ns: int = Field(default=0, ge=0)
    kernel_count: int = Field(default=0, ge=0)
    count: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> RangeRecord:
        if self.end_ns < self.start_ns:
            raise ValueError("range ends before it starts")
        if self.wall_ns is None:
            object.__setattr__(self, "wall_ns", self.end_ns - self.start_ns)
        return self


class ProcessSpan(BaseModel):
    """From the profiler's start (CUDA or NVTX init) to the process's exit."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    start_ns: int = Field(ge=0)
    end_ns: int = Field(ge=0)


class DroppedCounts(BaseModel):
    """What the profiler could not keep; non-zero counts make some timings unreliable."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kernels: int = 0
    ranges: int = 0
    launches: int = 0
    records: int = 0
    unmatched_range_ends: int = 0


class L2FlushRecord(BaseModel):
    """What the grader's L2 flush did in the run (present when it was asked for): ``bytes``
    per flush, the device's ``l2_bytes``, ``count`` flushes done, ``skipped`` timed ranges
    with no CUDA context yet, ``failures`` refused by the driver (``error``: the first), and
    the GPU time of the flush memsets CUPTI saw (``gpu_count``, ``gpu_ns``: never counted as
    the program's)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    request: int = Field(default=0, ge=0)
    bytes: int = Field(default=0, ge=0)
    l2_bytes: int = Field(default=0, ge=0)
    count: int = Field(default=0, ge=0)
    skipped: int = Field(default=0, ge=0)
    failures: int = Field(default=0, ge=0)
    gpu_count: int = Field(default=0, ge=0)
    gpu_ns: int = Field(default=0, ge=0)
    error: str | None = None


class ProfileData(BaseModel):
    """The profiler's output document."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    version: int = 1
    nonce: str
    error: str | None = None
    process: ProcessSpan | None = None
    kernels_aggregated: bool = False
    kernels: list[KernelRecord] = Field(default_factory=list)
    memcpy: list[MemcpyRecord] = Field(default_factory=list)
    l2_flush: L2FlushRecord | None = None
    ranges_aggregated: bool = False
    ranges: list[RangeRecord] = Field(default_factory=list)
    ranges_complete: bool = True
    dropped: DroppedCounts = Field(default_factory=DroppedCounts)


def load_profile(path: str | os.PathLike[str], expected_nonce: str) -> ProfileData:
    """Read and authenticate a profile; GradingError if missing, corrupt, forged or failed.

    A missing file usually means the process died before exit handlers ran (or never
    initialised CUDA); a wrong nonce means the file was not written by this run's profiler.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_PROFILE_BYTES:
            raise GradingError(f"profile {p} is implausibly large")
        raw = p.read_bytes()
    except FileNotFoundError as exc:
        raise GradingError(
            f"no profile at {p}: the process exited without running exit handlers or never used CUDA"
        ) from exc
    except OSError as exc:
        raise GradingError(f"cannot read profile {p}: {exc}") from exc
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        nonce = doc.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(
            nonce.encode(), expected_nonce.encode()
        ):
            raise GradingError(f"profile {p} has the wrong nonce: forged or stale")
        profile = ProfileData.model_validate(doc)
    except (ValueError, ValidationError) as exc:  # JSONDecodeError is a ValueError
        raise GradingError(f"corrupt profile {p}: {exc}") from exc
    if profile.error:
        raise GradingError(f"the profiler failed in the benchmark process: {profile.error}")
    return profile
