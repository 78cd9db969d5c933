"""The Question model: one question about a CUDA program with one trusted answer.

A question is not a :class:`~cudaenv.problems.model.Problem`: it has no workspace, build or
test command. It carries its text, the form its answer takes, the expected answer (and any
other answer that is equally right), where the truth came from, and the chance that a uniform
guess over the answer's natural space is right. ``row()`` is the question without its answer,
the form that reaches a model or a dataset.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal[
    "exec-output", "test-output", "launch", "bug-locate", "race", "occupancy", "bank", "coalesce"
]
KINDS: tuple[Kind, ...] = (
    "exec-output", "test-output", "launch", "bug-locate", "race", "occupancy", "bank", "coalesce"
)  # fmt: skip
#: array: a JSON array (nested or flat); integer; indices: a JSON list of integers, any
#: order; race: {"race": bool, "line": int | null}
AnswerFormat = Literal["array", "integer", "indices", "race"]
#: the fields ``row()`` leaves out: nothing a model or a dataset row may see
HIDDEN_FIELDS = frozenset({"expected", "accepted"})


class Question(BaseModel):
    """One question. ``group`` is its kind (so per-group summaries are per kind)."""

    # infinities (an exclusive max scan starts at -inf) written as JSON's Infinity, not null
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="constants")

    task_id: str = Field(description='"q-<kind>-<family or topic>-<12 hex of the content>"')
    kind: Kind
    question: str = Field(description="the text shown to the model, without answer instructions")
    answer_format: AnswerFormat
    format_text: str = Field(
        description="how to write the answer, e.g. 'a JSON array of 6 numbers'"
    )
    expected: Any = Field(description="the answer (JSON value); never in a question row")
    accepted: list[Any] = Field(default_factory=list, description="other right answers")
    echo: list[str] = Field(
        default_factory=list,
        description="expressions of the question: an answer that repeats one scores 0",
    )
    chance: float = Field(ge=0.0, le=1.0, description="P(a uniform guess is right)")
    family: str | None = None
    language: Literal["cuda_cpp", "cuda_python"] | None = None
    variant: str = Field(default="reference", description="reference, a mutant's name, ...")
    verified: bool = Field(description="the truth agrees with a second, independent path")
    verification: str = Field(description="where the truth comes from and what checked it")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def group(self) -> str:
        return self.kind

    @property
    def prompt(self) -> str:
        return self.question

    @property
    def has_benchmark(self) -> bool:  # the eval CLI's optimize filter: questions have none
        return False

    @property
    def baseline_solution(self) -> None:
        return None

    def row(self) -> dict[str, Any]:
        """The question as data, its answers left out (datapacks, trainer rows)."""
        return self.model_dump(mode="json", exclude=set(HIDDEN_FIELDS))

    def answers(self) -> dict[str, Any]:
        """The hidden part: what ``row()`` leaves out, keyed by task_id."""
        return {"task_id": self.task_id, "expected": self.expected, "accepted": self.accepted}

    def content_hash(self) -> str:
        """SHA-256 of what defines the question: text, answer form and answers (not the id)."""
        body = self.model_dump(mode="json", exclude={"task_id", "metadata"})
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def kind_counts(questions: Iterable[Question]) -> dict[str, dict[str, Any]]:
    """Per kind: the count, how many are verified, and the chance level (the mean over the
    kind's questions of the probability that a uniform guess is right)."""
    items = list(questions)
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [q for q in items if q.kind == kind]
        if mine:
            out[kind] = {
                "count": len(mine),
                "verified": sum(q.verified for q in mine),
                "chance": round(sum(q.chance for q in mine) / len(mine), 6),
            }
    return out


__all__ = ["HIDDEN_FIELDS", "KINDS", "AnswerFormat", "Kind", "Question", "kind_counts"]
