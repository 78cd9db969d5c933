"""The answer parser and judge: literals only (never executed), LiveCodeBench's forms, exact
comparison by format, answers that repeat the question's expression rejected; fuzzed with
hypothesis (any text: no exception, no evaluation; any JSON value: read back equal)."""

from __future__ import annotations

import builtins
import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.questions.answers import from_text, judge, parse_answer, value_text
from cudaenv.questions.model import Question


def _q(
    fmt: str, expected: Any, accepted: list[Any] | None = None, echo: list[str] | None = None
) -> Question:
    return Question(task_id="q-test", kind="exec-output", question="?", answer_format=fmt,  # type: ignore[arg-type]
                    format_text="", expected=expected, accepted=accepted or [], echo=echo or [],
                    chance=0.0, verified=True, verification="test")  # fmt: skip


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@contextlib.contextmanager
def no_eval() -> Iterator[None]:
    """Any use of eval or exec inside the block fails loudly."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the answer parser evaluated code")

    saved = builtins.eval, builtins.exec
    builtins.eval, builtins.exec = refuse, refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        builtins.eval, builtins.exec = saved


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_or_is_refused_without_raising(text: str) -> None:
    with no_eval():
        parsed = parse_answer(text)
        verdict = judge(_q("array", [1, 2]), text)
    assert parsed.ok or parsed.reason
    assert verdict.correct in (True, False) and verdict.reason


@settings(max_examples=100, deadline=None)
@given(
    JSON,
    st.sampled_from(
        ["{}", "[ANSWER]{}[/ANSWER]", "```json\n{}\n```", "reasoning...\n[ANSWER] {} [/ANSWER]"]
    ),
)
def test_json_values_read_back_equal_in_every_wrapping(value: Any, wrap: str) -> None:
    text = wrap.replace("{}", json.dumps(value), 1)
    with no_eval():
        parsed = parse_answer(text)
    assert parsed.ok, (text, parsed.reason)
    want = value
    if isinstance(value, str) and parse_answer(json.dumps(value)).value != value:
        want = parse_answer(json.dumps(value)).value  # a string holding a literal is read once more
    assert parsed.value == want


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.integers(-100, 100) | st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=12
    )
)
def test_arrays_are_judged_exactly(values: list[Any]) -> None:
    q = _q("array", values)
    assert judge(q, json.dumps(values)).correct
    assert judge(q, str([float(v) for v in values])).correct  # 2 == 2.0, Python list syntax
    wrong = list(values)
    wrong[0] = wrong[0] + 1 if not math.isinf(wrong[0]) else 0
    assert not judge(q, json.dumps(wrong)).correct
    assert not judge(q, json.dumps(values[:-1] or [7, 7])).correct


def test_nothing_is_ever_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    attacks = [
        f"__import__('os').system('touch {marker}')",
        f"[ANSWER]__import__('pathlib').Path('{marker}').touch()[/ANSWER]",
        f"assert f(x) == open('{marker}', 'w')",
        "(lambda: 1)()",
        "[1] * 10**9",
        "[" * 100_000 + "]" * 100_000,
        "[" * 9_000 + "]" * 9_000,
        "9" * 200_000,
    ]
    for text in attacks:
        with no_eval():
            assert not judge(_q("array", [1]), text).correct
    assert not marker.exists()


def test_livecodebench_forms_and_format_rules() -> None:
    assert from_text("think...\n[ANSWER]\n[1, 2]\n[/ANSWER] done") == "\n[1, 2]\n"
    assert value_text("[ANSWER]assert row_sum(x, out) == [3, 4][/ANSWER]") == "[3, 4]"
    assert judge(_q("array", [[1, 2], [3, 4]]), "[[1, 2], [3, 4]]").correct
    assert judge(_q("array", [[1, 2], [3, 4]]), "[1, 2, 3, 4]").correct  # flat is accepted
    assert not judge(_q("array", [[1, 2], [3, 4]]), "[[1, 2, 3, 4]]").correct  # another nesting
    assert judge(_q("array", [float("-inf"), 1]), "[-Infinity, 1]").correct
    assert judge(_q("integer", 12), "12").correct and judge(_q("integer", 12), '"12"').correct
    assert judge(_q("integer", 12), "12.0").correct and not judge(_q("integer", 12), "true").correct
    assert (
        judge(_q("indices", [3, 1]), "[1, 3]").correct
        and not judge(_q("indices", [3, 1]), "[1]").correct
    )
    race = _q("race", {"race": True, "line": 7}, accepted=[{"race": True, "line": 8}])
    assert judge(race, '{"race": true, "line": 8}').correct
    assert judge(race, "{'race': True, 'line': 7}").correct  # a Python literal
    assert not judge(race, '{"race": true, "line": 9}').correct
    assert not judge(race, '{"race": false, "line": null}').correct
    calm = _q("race", {"race": False, "line": None})
    assert (
        judge(calm, '{"race": false, "line": 3}').correct
        and not judge(calm, '{"race": "no"}').correct
    )
    assert judge(race, None).reason == "no answer"


def test_an_answer_repeating_the_question_expression_scores_zero() -> None:
    q = _q("array", [3, 4], echo=["row_sum(x, out)", "row_sum("])
    verdict = judge(q, "[ANSWER]row_sum(x, out)[/ANSWER]")
    assert not verdict.correct and "repeats" in verdict.reason
    assert not judge(q, "row_sum( x,  out )").correct
    assert judge(q, "[ANSWER]assert out == [3, 4][/ANSWER]").correct
