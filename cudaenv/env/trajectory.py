"""Trajectory records: every step of an episode, serialisable to JSON."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Mode, SourceFile


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


class Turn(BaseModel):
    """One model reply as a trainer needs it (filled by training-mode model clients).

    Token fields are None when the server did not return them, so a trainer can tell
    "not provided" from "empty"; ``message`` is the assistant message exactly as returned.
    """

    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    message: dict[str, Any] = Field(default_factory=dict)
    finish_reason: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)  # other non-OpenAI response fields


class Trajectory(BaseModel):
    """One episode: what the agent did, what it saw, how it was graded.

    ``turns`` holds every model reply as returned (assistant text, reasoning, tool calls;
    token ids and logprobs in training mode); ``messages`` the conversation as the agent
    sent it, ending with its last reply (a model agent fills it); ``solution_files`` the
    files collected from the workspace and graded, so a run can be graded again or
    repaired without replaying its steps.
    """

    task_id: str
    mode: Mode
    instruction: str
    steps: list[StepRecord] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)  # per model reply
    messages: list[dict[str, Any]] = Field(default_factory=list)
    solution_files: list[SourceFile] | None = None  # None: the episode was never graded
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
    # one JSON-safe record per model call a gateway served (credentials already redacted)
    model_calls: list[dict[str, Any]] = Field(default_factory=list)
