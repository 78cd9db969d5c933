"""SkyRL adapter for the reasoning questions: ``QuestionTextEnv``, registered with skyrl_gym as
``env_class="cudaenv-questions"`` (by :func:`cudaenv.integrations.skyrl.register`).

One question per episode: ``init`` returns the answer-mode system prompt (how to answer in
text) and the question; ``step(text)`` reads the answer from the decoded text (a
``[ANSWER] ... [/ANSWER]`` block, an ``answer`` tool call, or the bare value) and ends the
episode with reward 1.0 or 0.0. Rows come from :func:`question_rows` (``skyrl_rows`` hands
question sources here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cudaenv.errors import MissingExtraError, SpecError

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError(
        "cudaenv.integrations.skyrl_questions needs skyrl-gym: pip install 'cudaenv[skyrl]'"
    ) from exc

__all__ = ["ENV_CLASS", "QuestionTextEnv", "question_rows", "text_system_prompt"]

ENV_CLASS = "cudaenv-questions"
_CONFIG = frozenset({"source", "prompt_style", "mode", "max_steps"})


def text_system_prompt() -> str:
    """The answer-mode system prompt plus how to give the answer in plain text."""
    from cudaenv.questions.env import SYSTEM_PROMPT

    return (f"{SYSTEM_PROMPT}\n\nGive the final answer in a block [ANSWER] <answer> [/ANSWER] "
            '(or a <tool_call>{"name": "answer", "arguments": {"answer": "<answer>"}}</tool_call>).')  # fmt: skip


def _plain(config: Any) -> dict[str, Any]:
    from cudaenv.integrations.skyrl_rows import plain

    return plain(config)


class QuestionTextEnv(BaseTextEnv):
    """One question as a skyrl_gym text env.

    Args:
        env_config: ``source`` (a ``questions:...`` string or a question datapack) and
            ``prompt_style`` ("direct" or "cot").
        extras: the row: ``task_id`` (or ``extra_info.task_id``).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        from cudaenv.integrations.skyrl_rows import row_value as _row_value
        from cudaenv.questions.env import QuestionEnv

        config = _plain(env_config)
        if unknown := sorted(set(config) - _CONFIG):
            raise SpecError(f"unknown env_config key(s) {unknown}", field="env_config")
        task_id = _row_value(dict(extras or {}), "task_id")
        if not isinstance(task_id, str) or not task_id:
            raise SpecError(
                "the SkyRL row needs a task_id (a column or extra_info.task_id)", field="task_id"
            )
        self.task_id = task_id
        self.env = QuestionEnv(task_id, source=str(config.get("source", "questions")),
                               prompt_style=config.get("prompt_style", "direct"))  # fmt: skip
        self.last_info: dict[str, Any] = {}

    def init(self, prompt: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The system prompt and the question (the row's ``prompt`` is replaced)."""
        text, info = self.env.reset(options={"task_id": self.task_id})
        messages = [
            {"role": "system", "content": text_system_prompt()},
            {"role": "user", "content": text},
        ]
        return messages, {k: v for k, v in info.items() if k != "tools"}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Judge the reply; the episode always ends here."""
        self.turns += 1
        _, reward, _, _, info = self.env.step(action)
        self.last_info = {k: v for k, v in info.items() if k not in ("verdict", "trajectory")}
        return BaseTextEnvStepOutput(
            observations=[], reward=float(reward), done=True, metadata=dict(self.last_info)
        )

    def close(self) -> None:
        self.env.close()

    def get_metrics(self) -> dict[str, Any]:
        return {"steps": self.turns, "is_success": float(bool(self.last_info.get("is_success"))),
                "reward_valid": 1.0}  # fmt: skip


def question_rows(
    source: str, ids: Iterable[str] | None = None, groups: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """SkyRL rows for a question source: ``env_class`` "cudaenv-questions", the question as
    the prompt, ``task_id`` and ``kind`` (also under ``extra_info``)."""
    from cudaenv.problems.loader import load_suite

    suite = load_suite(source).filter(include=list(ids) if ids is not None else None,  # type: ignore[call-arg]
                                      groups=list(groups) if groups is not None else None)  # fmt: skip
    return [
        {
            "data_source": "cudaenv-questions",
            "prompt": [{"role": "user", "content": q.question}],
            "env_class": ENV_CLASS,
            "task_id": q.task_id,
            "kind": q.kind,
            "reward_spec": {"method": "rule", "ground_truth": None},
            "extra_info": {"task_id": q.task_id, "kind": q.kind},
        }
        for q in suite
    ]
