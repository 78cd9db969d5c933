"""SkyRL adapter: ``CudaTextEnv``, a skyrl_gym ``BaseTextEnv`` over one cudaenv episode.

SkyRL's generator makes an env per trajectory with ``skyrl_gym.make(env_class,
env_config=..., extras=row)``, calls ``init(prompt)`` once, then ``step(decoded_text)`` until
``done``, then ``close()``. The model's text is parsed by cudaenv's one parser
(:mod:`cudaenv.env.actions_text`: Hermes ``<tool_call>`` blocks or bare JSON calls), so a
reply without a call gets a helpful observation, never an exception.

Masking: skyrl_gym has no field for "this reward is not the policy's" (its generator only
masks by stop reason, and an exception aborts the whole batch). So an infrastructure fault
(the sandbox cannot start, grading broke) ends the episode with reward 0 and
``metadata["reward_valid"] = False`` (and ``get_metrics()["reward_valid"] == 0.0``, so the
rate shows in SkyRL's rollout metrics); a trainer must drop those samples. Configuration
errors (unknown task id, bad mode) still raise: they are the user's, not a flaky host's.

Import this module (or call :func:`register`) to register ``env_class="cudaenv"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cudaenv.env.modes import check_mode
from cudaenv.errors import MissingExtraError, ModeError, ProblemNotFoundError, SpecError
from cudaenv.integrations.skyrl_rows import plain as _plain
from cudaenv.integrations.skyrl_rows import row_value as _row_value
from cudaenv.problems.model import Mode

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError(
        "cudaenv.integrations.skyrl needs skyrl-gym: pip install 'cudaenv[skyrl]'"
    ) from exc

__all__ = ["ENV_CLASS", "CudaTextEnv", "register", "skyrl_rows", "text_system_prompt"]

#: the ``env_class`` SkyRL rows name
ENV_CLASS = "cudaenv"
#: what a user's mistake raises, never masked as an infrastructure fault
_CONFIG_ERRORS = (ProblemNotFoundError, SpecError, ModeError)
_ENV_OPTIONS = frozenset(
    {
        "sandbox",
        "sandbox_options",
        "grading_sandbox",
        "max_tokens",
        "reward",
        "step_penalty",
        "grade_on_truncation",
        "grade_options",
    }
)


def text_system_prompt() -> str:
    """The system prompt for text-only models: cudaenv's, plus how to write a call.

    SkyRL applies the chat template without ``tools=``, so the schemas go in the text.
    """
    from cudaenv.env.instructions import SYSTEM_PROMPT
    from cudaenv.env.tools import tool_schemas

    schemas = "\n".join(json.dumps(t["function"]) for t in tool_schemas())
    return (
        f"{SYSTEM_PROMPT}\n\nCall a tool by writing a block like\n"
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>\n'
        "(several blocks run in order). The tools, as JSON schemas:\n"
        f"{schemas}"
    )


def _json_safe(info: Mapping[str, Any]) -> dict[str, Any]:
    """The step info without the pydantic ``verdict``/``trajectory`` objects."""
    return {k: v for k, v in info.items() if k not in ("verdict", "trajectory", "tools")}


class CudaTextEnv(BaseTextEnv):
    """One cudaenv episode as a skyrl_gym text env (see the module docstring).

    Args:
        env_config: SkyRL's ``skyrl_gym.cudaenv`` config: ``source`` (default "builtin"),
            ``mode`` (default "solve"), ``max_steps`` and CudaEnv options (``sandbox``,
            ``sandbox_options``, ``max_tokens``, ``reward``, ...).
        extras: the dataset row: ``task_id`` (or ``extra_info.task_id``), optional ``mode``,
            and ``max_turns`` (set by SkyRL's generator; used as ``max_steps``).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = _plain(env_config)
        extras = dict(extras or {})
        task_id = _row_value(extras, "task_id")
        if not isinstance(task_id, str) or not task_id:
            raise SpecError(
                "the SkyRL row needs a task_id (a column or extra_info.task_id)", field="task_id"
            )
        self.task_id = task_id
        self.mode: Mode = check_mode(_row_value(extras, "mode") or config.get("mode") or "solve")
        self.max_turns = int(extras.get("max_turns") or config.get("max_steps") or 50)
        unknown = sorted(set(config) - _ENV_OPTIONS - {"source", "mode", "max_steps"})
        if unknown:
            raise SpecError(f"unknown env_config key(s) {unknown}", field="env_config")
        options = {k: v for k, v in config.items() if k in _ENV_OPTIONS}
        from cudaenv.env.core import CudaEnv

        self.env = CudaEnv(
            task_id,
            mode=self.mode,
            source=str(config.get("source", "builtin")),
            max_steps=self.max_turns,
            **options,
        )
        self.fault: str | None = None  # an infrastructure fault at init
        self.last_info: dict[str, Any] = {}

    def init(self, prompt: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Open the sandbox; the first messages are cudaenv's system prompt and instruction.

        The row's ``prompt`` is replaced (the instruction lists the workspace the sandbox
        really holds). A sandbox that cannot start is an infrastructure fault: the first
        ``step`` ends the episode with ``reward_valid=False``.
        """
        try:
            text, info = self.env.reset(options={"task_id": self.task_id, "mode": self.mode})
        except _CONFIG_ERRORS:
            raise
        except Exception as exc:  # the sandbox or the host, not the policy: mask
            self.env.close()
            self.fault = f"reset failed: {type(exc).__name__}: {exc}"
            text, info = f"The environment failed to start ({self.fault}).", {}
        messages = [
            {"role": "system", "content": text_system_prompt()},
            {"role": "user", "content": text},
        ]
        meta = {"task_id": self.task_id, "mode": self.mode}
        if self.fault:
            meta.update(reward_valid=False, failure="infrastructure", reason=self.fault)
        return messages, {**meta, **_json_safe(info)}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run one model reply; ``done`` at submit or at ``max_turns`` (then graded)."""
        self.turns += 1
        if self.fault is not None:
            self.last_info = {
                "is_success": False,
                "reward_valid": False,
                "failure": "infrastructure",
                "reason": self.fault,
                "task_id": self.task_id,
                "mode": self.mode,
                "speedup": None,
            }
            return BaseTextEnvStepOutput(
                observations=[], reward=0.0, done=True, metadata=dict(self.last_info)
            )
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except BaseException:
            self.env.close()  # SkyRL does not close an env whose step raised
            raise
        done = terminated or truncated
        self.last_info = _json_safe(info)
        if done:
            self.env.close()
        observations = [] if done else [{"role": "user", "content": obs}]
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=float(reward),
            done=done,
            metadata=dict(self.last_info),
        )

    def close(self) -> None:
        """Close the sandbox (idempotent; SkyRL calls it once the episode is done)."""
        self.env.close()

    def get_metrics(self) -> dict[str, Any]:
        """Numeric per-episode metrics SkyRL averages: success, validity, speedup, steps."""
        info = self.last_info
        metrics: dict[str, Any] = {
            "steps": self.turns,
            "is_success": float(bool(info.get("is_success"))),
            "reward_valid": float(info.get("reward_valid", True) is not False),
        }
        if isinstance(info.get("speedup"), float):
            metrics["speedup"] = info["speedup"]
        return metrics


def register(env_class: str = ENV_CLASS) -> str:
    """Register :class:`CudaTextEnv` with skyrl_gym under ``env_class`` (idempotent), and the
    questions' text env as "cudaenv-questions" (:mod:`cudaenv.integrations.skyrl_questions`)."""
    from skyrl_gym.envs.registration import register as sky_register
    from skyrl_gym.envs.registration import registry

    if env_class not in registry:
        sky_register(id=env_class, entry_point=f"{__name__}:CudaTextEnv")
    if "cudaenv-questions" not in registry:
        sky_register(
            id="cudaenv-questions",
            entry_point="cudaenv.integrations.skyrl_questions:QuestionTextEnv",
        )
    return env_class


def skyrl_rows(
    source: str = "builtin",
    mode: Mode = "solve",
    ids: Iterable[str] | None = None,
    groups: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Dataset rows for SkyRL (write them to parquet): ``prompt``, ``env_class``, ``task_id``.

    The ``prompt`` is the problem's instruction as a user message (``init`` replaces it with
    the sandbox's own); ``extra_info`` carries ``task_id`` and ``mode`` too. A question source
    gives rows for ``env_class="cudaenv-questions"`` instead.
    """
    from cudaenv.env.suite import SuiteEnv
    from cudaenv.questions.source import is_question_source

    if is_question_source(source):
        from cudaenv.integrations.skyrl_questions import question_rows

        return question_rows(source, ids, groups)
    env = SuiteEnv(source, ids=ids, groups=groups, mode=mode)
    return [
        {
            "data_source": "cudaenv",
            "prompt": [{"role": "user", "content": p.prompt}],
            "env_class": ENV_CLASS,
            "task_id": p.task_id,
            "mode": mode,
            "reward_spec": {"method": "rule", "ground_truth": None},
            "extra_info": {"task_id": p.task_id, "mode": mode},
        }
        for p in env.problems
    ]


register()
