"""Question generation: byte-identical per seed, distinct, every kind, options checked, the
source string through ``load_suite``, unverified truths left out unless asked for."""

from __future__ import annotations

import json

import pytest

from cudaenv.errors import ProblemNotFoundError, SpecError
from cudaenv.problems.loader import load_suite
from cudaenv.questions import QuestionSuite, generate_questions
from cudaenv.questions.model import KINDS

SOURCE = "questions:seed=7,count=40"


def _dump(questions: list) -> str:
    return "\n".join(q.model_dump_json() for q in questions)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others() -> None:
    a = generate_questions(count=40, seed=7)
    assert _dump(a) == _dump(generate_questions(count=40, seed=7))
    other = generate_questions(count=40, seed=8)
    assert _dump(a) != _dump(other)


def test_every_kind_is_made_with_distinct_ids_and_hashes() -> None:
    qs = generate_questions(count=40, seed=7)
    assert len(qs) == 40
    assert {q.kind for q in qs} == set(KINDS)
    assert len({q.task_id for q in qs}) == 40
    assert len({q.content_hash() for q in qs}) == 40
    for q in qs:
        assert q.task_id.startswith(f"q-{q.kind}-") and q.group == q.kind
        assert 0.0 <= q.chance <= 1.0 and q.verification
        json.dumps(q.row())  # JSON-safe


def test_unverified_truths_are_left_out_unless_asked_for() -> None:
    default = generate_questions(count=30, seed=3, kinds=["exec-output", "race"])
    assert all(q.verified for q in default)
    kept = generate_questions(count=30, seed=3, kinds=["exec-output", "race"], unverified=True)
    cpp_mutants = [q for q in kept if q.language == "cuda_cpp" and q.variant != "reference"]
    assert cpp_mutants, "a C++ mutant question is drawn from 30"
    assert all(not q.verified and "GPU" in q.verification for q in cpp_mutants)
    assert all(q.verified for q in kept if q.language == "cuda_python")


def test_load_suite_serves_questions_and_filters_by_kind() -> None:
    suite = load_suite(SOURCE)
    assert isinstance(suite, QuestionSuite) and len(suite) == 40
    assert load_suite(SOURCE) is suite  # generated once
    races = suite.filter(groups=["race"])
    assert len(races) == 5 and {q.kind for q in races} == {"race"}
    first = suite[0]
    assert suite[first.task_id] is first and first.task_id in suite
    assert suite.filter(include=[first.task_id]).ids == [first.task_id]
    with pytest.raises(ProblemNotFoundError):
        suite.filter(include=["q-nope"])
    with pytest.raises(SpecError, match="tags"):
        suite.filter(tags=["x"])
    stats = suite.by_kind()
    assert set(stats) == set(KINDS) and all(s["count"] == 5 for s in stats.values())
    assert stats["race"]["chance"] > stats["exec-output"]["chance"] == 0.0


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("questions:seed=x", "seed"),
        ("questions:kinds=riddle", "kinds"),
        ("questions:families=nope", "families"),
        ("questions:colour=red", "colour"),
        ("questions:unverified=yes", "unverified"),
        ("questions:count=-1", "count"),
    ],
)
def test_bad_source_options_name_the_field(source: str, field: str) -> None:
    with pytest.raises(SpecError) as err:
        load_suite(source)
    assert err.value.field == field


def test_a_kind_no_selected_family_can_make_is_an_error() -> None:
    with pytest.raises(SpecError, match="occupancy"):
        generate_questions(count=2, kinds=["occupancy"], families=["py-scan"])


def test_family_and_kind_selection() -> None:
    qs = generate_questions(count=6, seed=2, kinds=["exec-output", "bank"], families=["py-stencil"])
    assert [q.kind for q in qs] == ["exec-output"] * 3 + ["bank"] * 3
    assert {q.family for q in qs if q.kind == "exec-output"} == {"py-stencil"}
    assert all(q.family is None for q in qs if q.kind == "bank")
