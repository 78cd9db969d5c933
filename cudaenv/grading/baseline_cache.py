"""Baseline timings cached by (problem content, GPU, driver, toolkit, timing mode).

An RL run grades thousands of samples of the same problem; re-timing the baseline for each
would double the benchmark cost. ``force`` re-times.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from filelock import FileLock

from cudaenv.grading.cache_files import warn_failed, write_atomic
from cudaenv.grading.verdict import Timing
from cudaenv.problems.model import Problem
from cudaenv.toolkit import GpuInfo, cache_dir


def baseline_key(problem: Problem, gpu: GpuInfo) -> str:
    blob = json.dumps(
        [
            problem.content_hash(),
            gpu.name,
            gpu.driver,
            gpu.toolkit,
            problem.timing_mode.model_dump(),
        ],
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class BaselineCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "baselines"
        self.root.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> Timing | None:
        path = self.root / f"{key}.json"
        try:
            return Timing.model_validate_json(path.read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, timing: Timing) -> None:
        """Store ``timing``; a failed write (a full disk) warns and costs only the cache."""
        path = self.root / f"{key}.json"
        try:
            lock = FileLock(str(path) + ".lock")
            lock.acquire()
        except OSError as exc:
            warn_failed("baseline timing", path, exc)
            return
        try:
            write_atomic(path, timing.model_dump_json(), what="baseline timing")
        finally:
            lock.release()
