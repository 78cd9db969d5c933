"""Baseline timings cached by (problem content, GPU, driver, toolkit, timing mode).

An RL run grades thousands of samples of the same problem; re-timing the baseline for each
would double the benchmark cost. ``force`` re-times.

Who may write: only a run where no solution ran (:func:`cudaenv.grading.baseline_pass.time_baseline`,
used by ``cudaenv validate`` and ``cudaenv baseline``), and every entry records its
:class:`Provenance`. A grade that times the baseline beside a solution uses that timing for its
own verdict and never stores it: a solution's leftovers (a busy loop that slowed the baseline's
rounds) would otherwise poison the speedup of every later sample on the machine. An entry
without provenance, or one that says a solution ran, is not trusted (a miss).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field

from cudaenv.grading.cache_files import warn_failed, write_atomic
from cudaenv.grading.profiler.flush import flush_env
from cudaenv.grading.verdict import Timing
from cudaenv.problems.model import Problem
from cudaenv.toolkit import GpuInfo, cache_dir


def baseline_key(problem: Problem, gpu: GpuInfo) -> str:
    """The cache key of a baseline timing: the problem, the device and its software, the
    timing mode, and the grader's L2 flush where the mode gets one (a flushed and an
    unflushed timing are not the same measurement; keys without a flush are unchanged)."""
    parts: list[object] = [
        problem.content_hash(),
        gpu.name,
        gpu.driver,
        gpu.toolkit,
        problem.timing_mode.model_dump(),
    ]
    if flush := flush_env(problem.timing_mode):
        parts.append(flush)
    blob = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class Provenance(BaseModel):
    """Who wrote a cached baseline timing, when, and under which conditions."""

    model_config = ConfigDict(extra="forbid")

    writer: str = Field(description="the command or function that timed it (validate, baseline)")
    written_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    host: str = Field(default_factory=socket.gethostname)
    pid: int = Field(default_factory=os.getpid)
    solution_ran: Literal[False] = False
    rounds: int = Field(gt=0)
    device: str
    sandbox: str = Field(description="the sandbox's isolation")
    conditions: str = "the baseline alone in a fresh sandbox, under the device lease"


class CachedBaseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timing: Timing
    provenance: Provenance


class BaselineCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "baselines"
        self.root.mkdir(parents=True, exist_ok=True)

    def entry(self, key: str) -> CachedBaseline | None:
        """The entry with its provenance; None when absent or untrusted (no provenance)."""
        path = self.root / f"{key}.json"
        try:
            return CachedBaseline.model_validate_json(path.read_text())
        except (OSError, ValueError):
            return None

    def get(self, key: str) -> Timing | None:
        entry = self.entry(key)
        return entry.timing if entry is not None else None

    def put(self, key: str, timing: Timing, provenance: Provenance) -> None:
        """Store ``timing``; a failed write (a full disk) warns and costs only the cache."""
        record = CachedBaseline(timing=timing, provenance=provenance)
        path = self.root / f"{key}.json"
        try:
            lock = FileLock(str(path) + ".lock")
            lock.acquire()
        except OSError as exc:
            warn_failed("baseline timing", path, exc)
            return
        try:
            write_atomic(path, record.model_dump_json(), what="baseline timing")
        finally:
            lock.release()
