"""Reading and judging an answer: text in, a verdict out, nothing ever executed.

An answer is a JSON value or a Python literal: ``json.loads`` first, then
``ast.literal_eval``, and nothing else, so ``__import__("os")`` or ``f(x)`` is just an
unparseable answer. LiveCodeBench's forms are accepted: ``[ANSWER] value [/ANSWER]`` and, inside
it, ``assert f(x) == value`` (only ``value`` is read). An answer whose value repeats one of the
question's expressions (the call, the launch arithmetic) scores 0 whatever it would evaluate to.
Comparison is exact, by the question's answer format.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from cudaenv.questions.model import Question

MAX_ANSWER_CHARS = 20_000
_TAG = re.compile(r"\[ANSWER\](.*?)\[/ANSWER\]", re.S | re.I)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.S)
_ASSERT = re.compile(r"^\s*assert\b.*?==(?!=)(.*)$", re.S)


@dataclass(frozen=True)
class Parsed:
    """A parsed answer (``ok``) or why it could not be read."""

    ok: bool
    value: Any = None
    reason: str = ""


@dataclass(frozen=True)
class Judgement:
    correct: bool
    parsed: Any
    reason: str


def from_text(text: str) -> str | None:
    """The last ``[ANSWER]...[/ANSWER]`` block of a reply, or None when there is none."""
    found = _TAG.findall(text[: 4 * MAX_ANSWER_CHARS])
    return found[-1] if found else None


def value_text(raw: str) -> str:
    """The value part of an answer: tags, code fences and an ``assert ... ==`` removed."""
    text = raw.strip()
    tagged = from_text(text)
    if tagged is not None:
        text = tagged.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    asserted = _ASSERT.match(text)
    if asserted:
        text = asserted.group(1).strip()
    return text.strip().strip("`").strip()


def parse_answer(raw: str) -> Parsed:
    """The value of an answer, read with ``json.loads`` or ``ast.literal_eval`` only.

    A JSON string holding a literal (``"[1, 2]"``) is read once more: tool arguments are
    often double-encoded. Never raises on any input.
    """
    if not isinstance(raw, str):
        return Parsed(False, reason=f"the answer is a {type(raw).__name__}, not text")
    text = value_text(raw)
    if not text:
        return Parsed(False, reason="empty answer")
    if len(text) > MAX_ANSWER_CHARS:
        return Parsed(False, reason=f"answer longer than {MAX_ANSWER_CHARS} characters")
    value = _literal(text)
    if isinstance(value, Parsed):
        return value
    if isinstance(value, str) and value.strip() and value.strip() != text:
        inner = _literal(value.strip())
        if not isinstance(inner, Parsed):
            value = inner
    return Parsed(True, value)


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        return Parsed(False, reason=f"not a JSON value or literal ({type(exc).__name__})")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def repeats_expression(raw: str, question: Question) -> str | None:
    """The question's expression the answer repeats, if any."""
    body = _squash(value_text(raw))
    for expr in question.echo:
        if len(_squash(expr)) >= 3 and _squash(expr) in body:
            return expr
    return None


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _same_number(a: Any, b: Any) -> bool:
    if not (_number(a) and _number(b)):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _flatten(v: Any) -> tuple[list[Any], tuple[int, ...]] | None:
    """(the leaves, the shape) of a rectangular nested list; None when ragged or not a list."""
    if not isinstance(v, list | tuple):
        return None
    if not v or not isinstance(v[0], list | tuple):
        return list(v), (len(v),)
    parts = [_flatten(x) for x in v]
    if any(p is None for p in parts) or len({p[1] for p in parts if p}) != 1:
        return None
    leaves = [leaf for p in parts if p for leaf in p[0]]
    return leaves, (len(v), *parts[0][1])  # type: ignore[index]


def _array_equal(got: Any, want: Any) -> bool:
    g, w = _flatten(got), _flatten(want)
    if g is None or w is None or len(g[0]) != len(w[0]):
        return False
    if g[1] != w[1] and len(g[1]) != 1:  # nested as expected, or flat
        return False
    return all(_same_number(a, b) for a, b in zip(g[0], w[0], strict=True))


def _matches(fmt: str, got: Any, want: Any) -> bool:
    if fmt == "array":
        return _array_equal(got, want)
    if fmt == "integer":
        return _number(got) and float(got).is_integer() and int(got) == want
    if fmt == "indices":
        if not isinstance(got, list | tuple) or not all(
            _number(i) and float(i).is_integer() for i in got
        ):
            return False
        return sorted({int(i) for i in got}) == sorted(want)
    if not isinstance(got, dict) or not isinstance(got.get("race"), bool):
        return False
    if got["race"] != want["race"]:
        return False
    line = got.get("line")
    return not want["race"] or (
        _number(line) and float(line).is_integer() and int(line) == want["line"]
    )


def judge(question: Question, raw: str | None) -> Judgement:
    """Whether ``raw`` answers ``question``: parsed, never executed, compared exactly."""
    if raw is None:
        return Judgement(False, None, "no answer")
    echoed = repeats_expression(raw, question)
    if echoed is not None:
        return Judgement(False, None, f"the answer repeats the question's expression {echoed!r}")
    parsed = parse_answer(raw)
    if not parsed.ok:
        return Judgement(False, None, parsed.reason)
    for want in (question.expected, *question.accepted):
        if _matches(question.answer_format, parsed.value, want):
            return Judgement(True, parsed.value, "correct")
    return Judgement(False, parsed.value, "wrong answer")


__all__ = [
    "MAX_ANSWER_CHARS",
    "Judgement",
    "Parsed",
    "from_text",
    "judge",
    "parse_answer",
    "repeats_expression",
    "value_text",
]
