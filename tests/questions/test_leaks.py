"""The guards on what a model sees: the expected answer never appears in a question's prompt
(every kind, both prompt styles), question rows never carry answers, and what a truth was
built from (a mutant's name or description) is never shown."""

from __future__ import annotations

import json

import pytest

from cudaenv.questions import QuestionEnv, generate_questions
from cudaenv.questions.adapter import render
from cudaenv.questions.guards import array_written_out, leak
from cudaenv.questions.model import HIDDEN_FIELDS, KINDS, Question

QUESTIONS = generate_questions(count=64, seed=11, unverified=True)


def _prompts(q: Question) -> list[str]:
    out = []
    for style in ("direct", "cot"):
        env = QuestionEnv(q, prompt_style=style)
        env.reset()
        out.append("\n".join(m["content"] for m in env.messages))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_the_expected_answer_never_appears_in_the_prompt(kind: str) -> None:
    items = [q for q in QUESTIONS if q.kind == kind]
    assert items, f"no {kind} question drawn"
    for q in items:
        for text in _prompts(q):
            assert leak(q, text) is None, q.task_id
            if isinstance(q.expected, list) and len(q.expected) >= 2:
                assert json.dumps(q.expected) not in text
                assert json.dumps(q.expected, separators=(",", ":")) not in text
            if isinstance(q.expected, dict):
                assert json.dumps(q.expected) not in text


def test_the_guard_catches_an_answer_written_out() -> None:
    base = next(q for q in QUESTIONS if q.kind == "exec-output" and len(q.expected) >= 2)
    flat = [v for row in base.expected for v in (row if isinstance(row, list) else [row])]
    shown = base.model_copy(
        update={"question": base.question + "\nx = {" + ", ".join(map(str, flat)) + "}"}
    )
    assert leak(shown) is not None
    assert array_written_out([1, 2.5, float("-inf")], "y = np.array([[1.0, 2.5], [-np.inf]])")
    assert not array_written_out([1, 2], "x[-1, 2]") and not array_written_out([1, 2], "11, 2")
    race = next(q for q in QUESTIONS if q.kind == "race")
    told = race.model_copy(
        update={"question": race.question + f"\n[ANSWER] {json.dumps(race.expected)} [/ANSWER]"}
    )
    assert leak(told) is not None


def test_rows_carry_no_answers_and_no_mutant_labels() -> None:
    for q in QUESTIONS:
        row = q.row()
        assert not HIDDEN_FIELDS & set(row)
        assert row["task_id"] == q.task_id
        if q.family and q.variant != "reference" and not q.variant.startswith("no-barrier"):
            r = render(q.family, q.metadata["params"])
            variant = next(v for v in r.mutants() if v.name == q.variant)
            assert variant.description not in q.question
            assert "mutant" not in q.question.lower()
