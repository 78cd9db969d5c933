"""The status snapshot of a cluster run, as data (the CLI draws the live line and table).

``episodes_in_flight`` counts episodes submitted to workers and not yet back (running, or
waiting at a worker); ``queued`` counts exclusive stages waiting in the scheduler per grader
kind; each grader's ``inflight`` counts the items handed to it (one running, the rest
installing their builds or waiting for its device). Busy fractions are device-held seconds
over the grader's lifetime (a replaced grader starts again).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from cudaenv.cluster.scheduler import GraderState


class GraderRow(BaseModel):
    name: str
    kind: str
    node_id: str | None
    alive: bool
    ready: bool
    running: bool
    queued_here: int = Field(description="items handed to this grader, not yet running")
    graded: int
    restarts: int
    busy_fraction: float | None


class ClusterStatus(BaseModel):
    """One snapshot of a cluster run (``ClusterSession.status()``)."""

    episodes_in_flight: int
    episodes_pending: int = Field(description="not yet submitted to a worker")
    episodes_done: int
    episodes_retried: int
    workers: int
    nodes: int
    queued: dict[str, int] = Field(description="exclusive stages waiting, per grader kind")
    graders: list[GraderRow]
    gpu_busy_fraction: float | None = Field(description="mean over live GPU graders")
    cpu_busy_fraction: float | None = Field(description="mean over live CPU graders")
    grades_retried: int
    grades_failed: int

    def line(self) -> str:
        """One line for a live display."""
        queued = " ".join(f"{k}:{v}" for k, v in sorted(self.queued.items())) or "-"
        busy = "-" if self.gpu_busy_fraction is None else f"{self.gpu_busy_fraction:.0%}"
        cpu = "-" if self.cpu_busy_fraction is None else f"{self.cpu_busy_fraction:.0%}"
        live = sum(g.alive and g.ready for g in self.graders)
        return (
            f"episodes {self.episodes_in_flight} in flight, {self.episodes_pending} pending, "
            f"{self.episodes_done} done | queued {queued} | graders {live}/{len(self.graders)} "
            f"| GPU busy {busy} CPU-grader busy {cpu}"
        )


def grader_rows(states: list[GraderState]) -> list[GraderRow]:
    return [
        GraderRow(
            name=s.name,
            kind=s.kind,
            node_id=s.node_id,
            alive=s.alive,
            ready=s.ready,
            running=s.running,
            queued_here=max(0, s.inflight - int(s.running)),
            graded=s.graded,
            restarts=s.restarts,
            busy_fraction=s.busy_fraction,
        )
        for s in states
    ]


def mean_busy(rows: list[GraderRow], kind: str) -> float | None:
    values = [
        r.busy_fraction for r in rows if r.kind == kind and r.alive and r.busy_fraction is not None
    ]
    return sum(values) / len(values) if values else None
