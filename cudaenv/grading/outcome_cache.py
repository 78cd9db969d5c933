"""Cache of test-stage outcomes: the same files, harness and machine give the same verdict.

Grading is a pure function of its inputs, and RL runs grade many identical samples; re-running
a deterministic harness (seeded inputs, as docs/AUTHORING.md requires) buys nothing. The key
covers every file, the test command, the toolchain, and the GPU (or the simulator). Only clean
"ok"/"failed" outcomes are stored: timeouts, errors and anything flagged as a suspected hack
always run again. Benchmarks and sanitizer runs are never cached here.

A command that died by a signal is never stored, whatever the signal: an outside kill (an
operator's ``kill -9``, the host's OOM killer, Ctrl-C) says nothing about the files, and a
stored one failed every later grade of the same files (``cached: true``). Conservatively that
includes deaths the solution caused itself (SIGSEGV, SIGABRT): they only cost a re-run.
Writes use unique temporary names and a rename (see :mod:`cudaenv.grading.cache_files`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from cudaenv.grading.cache_files import write_atomic
from cudaenv.grading.stages import death_signal
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.model import SourceFile
from cudaenv.toolkit import cache_dir


def outcome_key(
    files: Iterable[SourceFile], command: str, *, toolchain: str, device: str, extra: str = ""
) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        h.update(f.path.encode() + b"\0" + hashlib.sha256(f.content.encode()).digest())
    h.update(json.dumps([command, toolchain, device, extra]).encode())
    return h.hexdigest()


class OutcomeCache:
    """``<cache>/tests/<key>.json`` holding one StageResult."""

    def __init__(self) -> None:
        self.root = cache_dir() / "tests"
        self.root.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> StageResult | None:
        try:
            stage = StageResult.model_validate_json((self.root / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        return stage.model_copy(update={"cached": True})

    def put(self, key: str, stage: StageResult) -> None:
        """Store a clean outcome; deaths by a signal and a failed write are not stored."""
        if stage.status not in ("ok", "failed") or death_signal(stage) is not None:
            return
        write_atomic(self.root / f"{key}.json", stage.model_dump_json(), what="test outcome")
