"""Where question suites come from: a ``questions[:options]`` string (generated) or a question
datapack (``.tar.gz`` with ``questions.jsonl``). :func:`cudaenv.load_suite` calls these."""

from __future__ import annotations

import functools
from pathlib import Path

from cudaenv.questions.suite import QuestionSuite

PREFIX = "questions"


def is_question_source(source: object) -> bool:
    """Whether ``source`` names questions rather than problems."""
    if isinstance(source, QuestionSuite):
        return True
    text = str(source)
    if text == PREFIX or text.startswith(PREFIX + ":"):
        return True
    if text.endswith((".tar.gz", ".tgz")) and Path(text).is_file():
        from cudaenv.questions.datapack import is_question_datapack

        return is_question_datapack(text)
    return False


def load_questions(source: str) -> QuestionSuite:
    """The QuestionSuite of a ``questions:...`` string (generated once, then cached) or of a
    question datapack (read each time)."""
    if source == PREFIX or source.startswith(PREFIX + ":"):
        return _generated(source)
    from cudaenv.questions.datapack import read_questions

    return QuestionSuite(read_questions(source), source=source)


@functools.cache
def _generated(source: str) -> QuestionSuite:
    from cudaenv.questions.generate import from_source

    return QuestionSuite(from_source(source), source=source)


__all__ = ["PREFIX", "is_question_source", "load_questions"]
