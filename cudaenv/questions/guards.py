"""The guard that a prompt does not give its answer away, applied to every question the
generator makes (a question that fails it is dropped) and asserted for every kind in the tests.

What counts as giving it away: an array answer written out anywhere in the prompt (as JSON, a
comma or space separated list, a C++ initializer, in any nesting), as when a wrong kernel
leaves its output exactly as the call showed it; a scalar or object answer written in answer
form (``[ANSWER] 4``, ``"answer": 4``, ``{"race": true, "line": 12}``); a comment on the line
an answer names that says what is wrong there.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cudaenv.questions.model import Question

_TELLTALE = re.compile(r"(#|//).*\b(bug|wrong|mutant|missing|race|no barrier|removed)\b", re.I)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _num(v: Any) -> list[str]:
    """How a number may be written: ``2``, ``2.0``, ``Infinity``, ``inf``, ``np.inf``."""
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        sign = "-" if v < 0 else ""
        return [f"{sign}Infinity", f"{sign}inf", f"{sign}np.inf", f"{sign}INFINITY"]
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return [str(int(v)), f"{int(v)}.0"]
    return [repr(v)]


def _squash(text: str) -> str:
    return re.sub(r"[\s\[\]{}()]+", "", text)


def array_written_out(values: list[Any], text: str) -> bool:
    """Whether the sequence ``values`` (2 or more) appears in ``text`` as a list of numbers,
    whatever the brackets, spacing and float spelling."""
    if len(values) < 2:
        return False
    body = _squash(text)
    options = [_num(v) for v in values]
    pattern = ",".join("(?:" + "|".join(re.escape(o) for o in opts) + ")" for opts in options)
    return re.search(rf"(?<![\d.\-]){pattern}(?![\d.])", body) is not None


def leak(q: Question, prompt: str | None = None) -> str | None:
    """Why ``q``'s prompt gives its answer away, or None."""
    text = prompt if prompt is not None else q.question
    for want in (q.expected, *q.accepted):
        if isinstance(want, list):
            if array_written_out(_leaves(want), text):
                return f"the answer {json.dumps(want)[:80]} is written out in the prompt"
            continue
        for enc in (json.dumps(want), json.dumps(want, separators=(",", ":"))):
            for form in (f"[ANSWER]{enc}", f'"answer":{enc}', f"answer={enc}", f"answeris{enc}"):
                if form.replace(" ", "") in text.replace(" ", ""):
                    return f"the prompt states the answer ({form})"
        if isinstance(want, dict) and json.dumps(want) in text:
            return "the prompt holds the answer object"
    lines = [line for line in text.split("\n") if re.match(r"^\s*\d+ \| ", line)]
    for want in (q.expected, *q.accepted):
        line = (
            want.get("line")
            if isinstance(want, dict)
            else want
            if q.answer_format == "integer" and q.kind == "bug-locate"
            else None
        )
        if isinstance(line, int) and 1 <= line <= len(lines) and _TELLTALE.search(lines[line - 1]):
            return f"line {line} carries a telltale comment"
    return None


__all__ = ["array_written_out", "leak"]
