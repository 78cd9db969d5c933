"""Reading a finished (or partial) run directory back: its samples as graded rows, the final
solution files its trajectories stored, and the failed samples a repair run starts from.

A run directory holds ``results.jsonl`` (one :class:`~cudaenv.rollout.episode.EpisodeResult`
per line; the last line of a key wins), ``trajectories.jsonl`` (``{"key", "trajectory"}``),
``run.json`` (:mod:`cudaenv.rollout.manifest`) and ``summary.json``. ``cudaenv grade`` writes
``graded.jsonl`` instead of results (:class:`~cudaenv.grading.summary.Graded` rows); both read
back as the same rows here, so ``report`` and ``compare`` take either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.grading.summary import Graded
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.rollout.episode import Job
from cudaenv.rollout.manifest import RunManifest, read_manifest
from cudaenv.rollout.store import ResultStore

__all__ = ["FailedSample", "RunDir", "graded_rows", "is_run_dir", "repair_jobs", "repair_plan"]


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a directory an ``eval`` or ``grade`` run wrote."""
    return path.is_dir() and any(
        (path / name).exists() for name in ("results.jsonl", "graded.jsonl", "run.json")
    )


def _reason(rec: Mapping[str, Any]) -> str:
    error = rec.get("error") or ""
    return error.splitlines()[0] if error else ""


def graded_rows(records: Iterable[Mapping[str, Any]], mode: str) -> list[Graded]:
    """Results as ``Graded`` rows: an agent error is a failed sample, an infrastructure fault a
    sample marked ``failure="infrastructure"`` (left out of pass@k by ``summarise``).

    Rows of a ``grade`` run (a ``verdict`` and a ``sample``, no ``status``) pass through."""
    rows = []
    for rec in records:
        verdict = Verdict.model_validate(rec["verdict"]) if rec.get("verdict") else None
        status = rec.get("status", "ok")
        reason = _reason(rec)
        if status == "infrastructure":
            verdict = (verdict or Verdict(task_id=rec["task_id"], mode=mode)).model_copy(
                update={
                    "failure": "infrastructure",
                    "passed": None,
                    "reason": reason or "infrastructure",
                }
            )
        elif verdict is None:
            verdict = Verdict(
                task_id=rec["task_id"],
                mode=mode,
                passed=False,
                failure="agent",
                reason=reason or status,
            )
        sample = rec.get("attempt", rec.get("sample", 0))
        rows.append(
            Graded(task_id=rec["task_id"], group=rec["group"], sample=sample, verdict=verdict)
        )
    return rows


@dataclass(frozen=True)
class FailedSample:
    """A sample that ran, was graded and failed by the agent's fault: what repair starts from."""

    key: str
    task_id: str
    files: list[SourceFile]
    verdict: Verdict

    @property
    def solution(self) -> Solution:
        return Solution(task_id=self.task_id, files=self.files)


class RunDir:
    """A run directory, read back (nothing is written)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not is_run_dir(self.path):
            raise SourceNotFoundError(
                f"{self.path} is not a run directory (no results.jsonl, graded.jsonl or run.json)"
            )
        self.manifest: RunManifest | None = read_manifest(self.path)
        name = "graded" if (self.path / "graded.jsonl").exists() else "results"
        self.kind = name
        self.store = ResultStore(self.path, name)

    @property
    def mode(self) -> str:
        if self.manifest is not None:
            return self.manifest.mode
        for rec in self.latest().values():
            verdict = rec.get("verdict") or {}
            if verdict.get("mode"):
                return str(verdict["mode"])
        return "solve"

    def summary(self) -> dict[str, Any]:
        """``summary.json`` (empty if there is none yet or it cannot be read)."""
        try:
            data = json.loads((self.path / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last record per key (a resume may have replaced an infrastructure fault)."""
        out: dict[str, dict[str, Any]] = {}
        for rec in self.store.records():
            if "key" in rec:
                out[str(rec["key"])] = rec
        return out

    def trajectories(self) -> dict[str, dict[str, Any]]:
        """The last stored trajectory (a JSON dict) per key."""
        out: dict[str, dict[str, Any]] = {}
        for rec in ResultStore(self.path, "trajectories").records():
            if "key" in rec and isinstance(rec.get("trajectory"), dict):
                out[str(rec["key"])] = rec["trajectory"]
        return out

    def rows(self) -> list[Graded]:
        return graded_rows(self.latest().values(), self.mode)

    def solutions(self) -> dict[str, list[SourceFile] | None]:
        """Each sample's graded files, from its trajectory (None: none was stored, e.g. the
        episode never reached grading or an older cudaenv wrote it)."""
        trajs = self.trajectories()
        out: dict[str, list[SourceFile] | None] = {}
        for key in self.latest():
            files = (trajs.get(key) or {}).get("solution_files")
            out[key] = [SourceFile.model_validate(f) for f in files] if files is not None else None
        return out

    def failed_samples(self) -> tuple[list[FailedSample], int]:
        """The samples graded as the agent's failure with stored files, in key order, and how
        many such failures had no stored files (they cannot be repaired)."""
        solutions = self.solutions()
        found, missing = [], 0
        for key, rec in sorted(self.latest().items()):
            verdict = rec.get("verdict")
            if rec.get("status", "ok") != "ok" or not verdict:
                continue
            v = Verdict.model_validate(verdict)
            if v.passed is not False or v.failure != "agent":
                continue
            files = solutions.get(key)
            if not files:
                missing += 1
                continue
            found.append(FailedSample(key=key, task_id=rec["task_id"], files=files, verdict=v))
        return found, missing


def repair_jobs(
    failed: Iterable[FailedSample], problems: Mapping[str, Problem], attempts: int
) -> list[Job]:
    """``attempts`` repair episodes per failed sample of a selected problem: each starts from
    the sample's files, its verdict in the instruction (``CudaEnv(mode="repair",
    repair_solution=, repair_verdict=)``). A problem's repair episodes are numbered from 0 in
    the order of the failed samples' keys; ``origin`` names the sample."""
    counts: dict[str, int] = {}
    jobs = []
    for sample in failed:
        problem = problems.get(sample.task_id)
        if problem is None:
            continue
        options = {"repair_solution": sample.solution, "repair_verdict": sample.verdict}
        for _ in range(attempts):
            n = counts.get(sample.task_id, 0)
            counts[sample.task_id] = n + 1
            jobs.append(Job(problem=problem, attempt=n, env_options=options, origin=sample.key))
    return jobs


def repair_plan(
    run_dir: Path, problems: Sequence[Problem], attempts: int
) -> tuple[list[Job], dict[str, Any]]:
    """``eval --mode repair --from RUN``: the repair episodes of RUN's failed samples among
    ``problems`` (:func:`repair_jobs`), and what the summary records about them. A problem
    whose content changed since RUN graded it is a SpecError: its failure is another's."""
    run = RunDir(run_dir)
    failed, missing = run.failed_samples()
    by_id = {p.task_id: p for p in problems}
    stored = run.manifest.problems if run.manifest is not None else {}
    for sample in failed:
        p = by_id.get(sample.task_id)
        if p is not None and stored.get(p.task_id, p.content_hash()) != p.content_hash():
            raise SpecError(
                f"problem {p.task_id} changed since {run_dir} ran it (content hash); repair it "
                "against the same problems (--source)",
                field="from",
            )
    jobs = repair_jobs(failed, by_id, attempts)
    info = {
        "from": str(run_dir),
        "failed_samples": len(failed),
        "failed_without_files": missing,
        "repaired_samples": len({j.origin for j in jobs}),
    }
    return jobs, info
