"""TRL adapter for the reasoning questions: ``QuestionTRLEnv``, one question per rollout with
one tool, ``answer``. :func:`cudaenv.integrations.trl.environment_factory` and
:func:`~cudaenv.integrations.trl.dataset_rows` hand question sources (``questions:...``, a
question datapack) to this module, so a GRPO run mixes them in by naming the source.

TRL turns every public method but ``reset`` and ``get_reward`` into a tool: here that is only
``answer``. ``reset(**row)`` returns the question (TRL appends it to the row's prompt);
``get_reward()`` is 1.0 for a right answer, 0.0 for a wrong one or none.

>>> import inspect
>>> Env = question_environment_factory("questions:seed=1,count=2,kinds=bank")
>>> [n for n, _ in inspect.getmembers(Env, inspect.isfunction) if not n.startswith("_")]
['answer', 'get_reward', 'reset']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from cudaenv.errors import CudaEnvError, SpecError

__all__ = ["QuestionTRLEnv", "question_environment_factory", "question_rows"]


class QuestionTRLEnv:
    """One reusable rollout slot over a question suite (bound by the factory)."""

    _source: ClassVar[Any] = "questions"
    _ids: ClassVar[list[str] | None] = None
    _groups: ClassVar[list[str] | None] = None
    _prompt_style: ClassVar[str] = "direct"

    def __init__(self) -> None:
        self._env: Any = None
        self._info: dict[str, Any] | None = None
        self._reward: float | None = None
        self._over = True
        self._started = False

    def reset(self, task_id: str | None = None, prompt_style: str | None = None, **row: Any) -> str:
        """Start the row's question and return it (other row columns are ignored)."""
        env = self._question_env()
        self._info, self._reward, self._over, self._started = None, None, False, True
        options: dict[str, Any] = {
            "task_id": task_id,
            "prompt_style": prompt_style or self._prompt_style,
        }
        text, _ = env.reset(options=options)
        return str(text)

    def answer(self, answer: str) -> str:
        """Give your final answer to the question. Ends the episode.

        Args:
            answer: The answer, written in the form the question asks for.
        """
        if not self._started or self._over:
            raise CudaEnvError("answer(): no question is open; reset() starts the next")
        obs, reward, *_, info = self._env.step({"tool": "answer", "args": {"answer": answer}})
        self._over, self._reward, self._info = True, float(reward), info
        return str(obs)

    def get_reward(self) -> float | None:
        """1.0 for a right answer, else 0.0 (a rollout that never answered scores 0.0)."""
        if not self._started:
            raise CudaEnvError("get_reward() before reset(): no rollout to score")
        if not self._over:
            *_, info = self._env.submit(truncation_reason="no answer")
            self._over, self._reward, self._info = True, 0.0, info
        return self._reward

    @property
    def info(self) -> dict[str, Any] | None:
        """The last episode's terminal ``info`` (answer, parsed value, reason, kind)."""
        return self._info

    def _question_env(self) -> Any:
        if self._env is None:
            from cudaenv.questions.env import QuestionEnv

            suite = _suite(type(self))
            self._env = QuestionEnv(suite[0], source=suite, prompt_style=self._prompt_style)
        return self._env


def _suite(cls: type[QuestionTRLEnv]) -> Any:
    from cudaenv.problems.loader import load_suite

    suite = load_suite(cls._source)
    chosen = suite.filter(include=cls._ids, groups=cls._groups)  # type: ignore[attr-defined]
    if not len(chosen):
        raise SpecError(f"no question of {cls._source} matches ids/groups", field="ids")
    return chosen


def question_environment_factory(
    source: Any = "questions",
    *,
    ids: Iterable[str] | None = None,
    groups: Iterable[str] | None = None,
    prompt_style: str = "direct",
    **options: Any,
) -> type[QuestionTRLEnv]:
    """A :class:`QuestionTRLEnv` subclass bound to a question source (``groups``: kinds)."""
    from cudaenv.questions.env import PROMPT_STYLES

    if unknown := sorted(options):
        raise SpecError(
            f"unknown question env option(s) {unknown}; only prompt_style", field="env_options"
        )
    if prompt_style not in PROMPT_STYLES:
        raise SpecError(f"unknown prompt style {prompt_style!r}", field="prompt_style")
    attrs = {
        "_source": source,
        "_ids": list(ids) if ids is not None else None,
        "_groups": list(groups) if groups is not None else None,
        "_prompt_style": prompt_style,
        "__doc__": QuestionTRLEnv.__doc__,
        "__module__": __name__,
    }
    cls = type("QuestionTRLEnv", (QuestionTRLEnv,), attrs)
    _suite(cls)  # an unknown id or an empty selection fails now
    return cls


def question_rows(
    source: Any = "questions", ids: Iterable[str] | None = None, groups: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """One row per question: ``{"prompt": [system, empty user], "task_id", "kind"}``."""
    from cudaenv.questions.env import SYSTEM_PROMPT

    cls = type("_Rows", (QuestionTRLEnv,), {"_source": source, "_ids": list(ids) if ids else None,
                                            "_groups": list(groups) if groups else None})  # fmt: skip
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ""}]
    return [
        {"prompt": [dict(m) for m in prompt], "task_id": q.task_id, "kind": q.kind}
        for q in _suite(cls)
    ]
