"""CUDA reasoning questions with answers a CPU can check: what a kernel writes, what a correct
solution must write, how a call is launched, where a wrong solution goes wrong, whether a
kernel races, how many blocks fit on an SM, how a warp's accesses meet the banks and sectors.

``load_suite("questions:seed=S,count=N,kinds=exec-output+race")`` generates a
:class:`QuestionSuite` from the problem families; :class:`QuestionEnv` is one question as a
one-step env (``mode="answer"``, one tool ``answer``); ``suite.to_datapack(path)`` exports it
with the answers in their own file. See the README's "Reasoning questions" section.

>>> from cudaenv.questions import generate_questions
>>> qs = generate_questions(count=2, seed=1, kinds=["bank", "coalesce"])
>>> [q.kind for q in qs], all(q.verified for q in qs)
(['bank', 'coalesce'], True)
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "KINDS": "cudaenv.questions.model",
    "Question": "cudaenv.questions.model",
    "QuestionSuite": "cudaenv.questions.suite",
    "QuestionEnv": "cudaenv.questions.env",
    "generate_questions": "cudaenv.questions.generate",
    "from_source": "cudaenv.questions.generate",
    "judge": "cudaenv.questions.answers",
    "parse_answer": "cudaenv.questions.answers",
    "read_questions": "cudaenv.questions.datapack",
    "write_questions": "cudaenv.questions.datapack",
    "is_question_source": "cudaenv.questions.source",
    "load_questions": "cudaenv.questions.source",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cudaenv.questions' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
