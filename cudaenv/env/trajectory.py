"""Trajectory records: every step of an episode, serialisable to JSON."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from cudaenv.grading.verdict import Verdict


class StepRecord(BaseModel):
    index: int
    tool: str | None
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    observation: str
    reward: float = 0.0
    error: str | None = None
    duration_s: float = 0.0
    tokens: int = 0


class Trajectory(BaseModel):
    """One episode: what the agent did, what it saw, how it was graded."""

    task_id: str
    mode: str
    instruction: str
    steps: list[StepRecord] = Field(default_factory=list)
    verdict: Verdict | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    truncation_reason: str | None = None
    observation_tokens: int = 0
    seconds: float = 0.0
    agent: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None  # what the agent's model calls cost, where its CLI reports it
