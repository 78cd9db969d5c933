"""verifiers (v1) adapter: cudaenv problems as a verifiers taskset, harness and env.

verifiers v1 splits an environment into a ``Taskset`` (rows in), a ``Harness`` (the agent
program that talks to the model through verifiers' interception endpoint, which records
the trace), a per-rollout ``Runtime``, and ``Task`` rewards. Here:

- :class:`CudaTaskset` yields one :class:`CudaTask` per problem (``source``/``ids``/
  ``groups``/``mode``); its reward is the cudaenv episode's reward.
- :class:`CudaHarness` runs the episode: a fresh :class:`~cudaenv.env.core.CudaEnv` per
  rollout (a :class:`~cudaenv.env.process_env.ProcessEnv` in a worker process with
  ``processes``), the model called at the rollout's endpoint with cudaenv's tools, every reply
  stepped with ``astep`` until ``submit`` or the step budget. The env is closed when the
  rollout ends, raises or is cancelled (a cancelled ``astep`` closes it once its thread
  returns). The work happens in cudaenv's own sandbox, so the rollout runtime is the
  light ``subprocess`` one.
- An infrastructure fault (the sandbox cannot start; the verdict's ``failure`` is
  "infrastructure") raises ``vf.SandboxError``: verifiers records it as the trace's
  ``last_error``, skips scoring and marks the rollout not ok, so prime-rl masks it
  instead of training on a 0.
- :class:`CudaVfEnv` is the single-agent env with that runtime as its default.

verifiers finds plugins by importing the taskset id as a top-level module and taking the
classes its ``__all__`` exports: the id is ``cudaenv``, the package itself, whose ``__all__``
names :class:`CudaTaskset`, :class:`CudaHarness` and :class:`CudaVfEnv` wherever verifiers
is installed. So ``pip install 'cudaenv[verifiers]'`` is all ``vf-eval cudaenv`` needs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

from cudaenv.env.modes import check_mode
from cudaenv.errors import (
    InfrastructureError,
    MissingExtraError,
    ModeError,
    ProblemNotFoundError,
    SpecError,
    WorkerError,
)
from cudaenv.problems.model import Mode

try:
    import verifiers.v1 as vf
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError(
        "cudaenv.integrations.verifiers needs verifiers: pip install 'cudaenv[verifiers]'"
    ) from exc

__all__ = [
    "TASKSET_ID",
    "CudaHarness",
    "CudaHarnessConfig",
    "CudaTask",
    "CudaTaskData",
    "CudaTaskset",
    "CudaTasksetConfig",
    "CudaVfEnv",
    "CudaVfEnvConfig",
    "load_environment",
]

#: the taskset (and harness) id verifiers resolves: the module ``cudaenv``
TASKSET_ID = "cudaenv"
#: env options that are Python objects (a sandbox factory, a reward callable) cannot ride
#: a pydantic config; load_environment keeps them here, the config names them by key
_OPTIONS: dict[str, dict[str, Any]] = {}


class CudaTaskData(vf.TaskData):
    """One problem: its ``task_id``, the episode's ``mode`` and the suite ``source``."""

    task_id: str
    mode: Mode = "solve"
    source: str = "builtin"


class CudaTask(vf.Task[CudaTaskData]):
    """A cudaenv problem; the reward is the graded episode's reward."""

    @property
    def key(self) -> str:
        return f"{self.data.task_id}:{self.data.mode}"

    @vf.reward(weight=1.0)
    async def cudaenv_reward(self, trace: vf.Trace) -> float:
        """What the harness recorded from the terminal step (0 when nothing was graded)."""
        return float(trace.metrics.get("cudaenv_reward") or 0.0)


class CudaTasksetConfig(vf.TasksetConfig):
    """Which problems: ``--env.taskset.source``, ``.ids``, ``.groups``, ``.mode``."""

    source: str = "builtin"
    ids: list[str] | None = None
    groups: list[str] | None = None
    mode: Mode = "solve"


class CudaTaskset(vf.Taskset[CudaTask, CudaTasksetConfig]):
    """One task per selected problem (unknown ids raise, naming the close matches)."""

    def load(self) -> Iterator[CudaTask]:
        from cudaenv.env.suite import SuiteEnv
        from cudaenv.problems.loader import load_suite
        from cudaenv.questions.source import is_question_source

        cfg = self.config
        if is_question_source(cfg.source):  # questions: one-step QuestionEnv episodes
            suite: Any = load_suite(cfg.source).filter(include=cfg.ids, groups=cfg.groups)
        else:
            suite = SuiteEnv(cfg.source, ids=cfg.ids, groups=cfg.groups, mode=cfg.mode).problems
        for p in suite:
            data = CudaTaskData(
                id=p.task_id,
                name=p.task_id,
                prompt=p.prompt,
                task_id=p.task_id,
                mode=cfg.mode,
                source=cfg.source,
            )
            yield CudaTask(data, self.config.task)


class CudaHarnessConfig(vf.HarnessConfig):
    """The episode's knobs: ``--env.agent.harness.sandbox``, ``.max-steps``, ..."""

    sandbox: str = "local"
    max_steps: int = 50
    max_tokens: int | None = None
    reward: str | None = None
    options_key: str | None = None
    """In-process options set by :func:`load_environment` (factories, callables)."""
    processes: bool = False
    """Run each episode's env in a worker process (:class:`~cudaenv.env.process_env.ProcessEnv`):
    the event loop serving hundreds of rollouts never waits for the episodes' Python."""


class CudaHarness(vf.Harness[CudaHarnessConfig]):
    """Runs one cudaenv episode per rollout against the rollout's model endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    NEEDS_CONTAINER = False
    EXECUTES_CODE = False  # commands run in cudaenv's sandbox, never in the vf runtime

    def _env(self, data: CudaTaskData) -> Any:
        from cudaenv.env.core import CudaEnv
        from cudaenv.env.process_env import ProcessEnv
        from cudaenv.questions.source import is_question_source

        if is_question_source(data.source):  # a question: no sandbox, microseconds, in-process
            from cudaenv.questions.env import QuestionEnv

            return QuestionEnv(data.task_id, source=data.source)
        cfg = self.config
        env_class: Any = ProcessEnv if cfg.processes else CudaEnv
        options: dict[str, Any] = {"sandbox": cfg.sandbox, "max_tokens": cfg.max_tokens}
        if cfg.reward is not None:
            options["reward"] = cfg.reward
        options.update(_OPTIONS.get(cfg.options_key or "", {}))
        return env_class(
            data.task_id, mode=data.mode, source=data.source, max_steps=cfg.max_steps, **options
        )

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        import openai

        if not isinstance(data, CudaTaskData):
            data = CudaTaskData.model_validate(data.model_dump())
        env = self._env(data)
        client = openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        cancelled_in_step = False  # then the astep closes the env once its thread returns
        try:
            try:
                await env.areset(options={"task_id": data.task_id, "mode": data.mode})
            except (ProblemNotFoundError, SpecError, ModeError):
                raise  # the user's configuration, not the host
            except Exception as exc:
                raise vf.SandboxError(f"cudaenv reset failed: {type(exc).__name__}: {exc}") from exc
            info: dict[str, Any] = {}
            reward, done = 0.0, False
            while not done:
                try:
                    resp = await client.chat.completions.create(
                        model=ctx.model, messages=env.messages, tools=env.tools
                    )
                    message: Any = resp.choices[0].message.model_dump(exclude_none=True)
                except openai.APIStatusError:
                    if trace.stop_condition is None:
                        raise
                    # a verifiers limit (max_turns, a token cap) or a @stop refused the turn:
                    # grade the workspace as it stands, as a truncated CudaEnv episode is
                    message = {"tool": "submit"}
                try:
                    _, reward, terminated, truncated, info = await env.astep(message)
                except asyncio.CancelledError:
                    cancelled_in_step = True
                    raise
                except (WorkerError, InfrastructureError) as exc:  # never the model's fault
                    raise vf.SandboxError(f"cudaenv infrastructure failed: {exc}") from exc
                done = terminated or truncated
            if info.get("reward_valid") is False:
                raise vf.SandboxError(f"cudaenv infrastructure failure: {info.get('reason')}")
            trace.record_metric("cudaenv_reward", float(reward))
            trace.record_metric("is_success", float(bool(info.get("is_success"))))
            if isinstance(info.get("speedup"), float):
                trace.record_metric("speedup", info["speedup"])
            return vf.ProgramResult(exit_code=0, stdout=str(info.get("reason") or ""), stderr="")
        finally:
            if not cancelled_in_step:
                env.close()
            await client.close()


class CudaVfEnvConfig(vf.EnvConfig):
    """The single agent seat, on the light subprocess runtime by default."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class CudaVfEnv(vf.Env[CudaVfEnvConfig]):
    """One agent (the policy) per episode, playing one cudaenv problem."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


def load_environment(
    source: str = "builtin",
    ids: list[str] | None = None,
    mode: Mode = "solve",
    *,
    groups: list[str] | None = None,
    max_steps: int = 50,
    max_turns: int | None = None,
    processes: bool = False,
    **env_options: Any,
) -> CudaVfEnv:
    """The verifiers v1 env over cudaenv problems, as ``vf-eval cudaenv`` builds it.

    ``max_steps`` is the env's step budget; ``max_turns`` verifiers' own turn cap (a refused
    turn ends the episode, graded as it stands). ``processes`` runs each episode's env in a
    worker process (``ProcessEnv``; its options must pickle). ``env_options`` are
    :class:`~cudaenv.env.core.CudaEnv` options (``sandbox`` may be a
    factory, ``sandbox_options``, ``reward``, ``max_tokens``, ...). Run it with verifiers'
    API: ``async with env.serving(): await env.run_slot(slot, ctx)`` for each of
    ``env.slots(task, n)`` over ``env.taskset``.
    """
    import inspect

    from cudaenv.env.core import CudaEnv

    check_mode(mode)  # a ModeError here, not the config's validation error
    allowed = set(inspect.signature(CudaEnv).parameters) - {"problem", "mode", "source"}
    if unknown := sorted(set(env_options) - allowed):
        raise SpecError(
            f"unknown env option(s) {unknown}; CudaEnv takes {sorted(allowed)}",
            field="env_options",
        )
    if processes:
        from cudaenv.env.process_env import check_picklable

        check_picklable(env_options)  # now, not in every rollout
    harness: dict[str, Any] = {"id": TASKSET_ID, "max_steps": max_steps, "processes": processes}
    for key in ("sandbox", "max_tokens", "reward"):  # plain values ride the config
        if key in env_options and isinstance(env_options[key], str | int | None):
            harness[key] = env_options.pop(key)
    if env_options:
        harness["options_key"] = key = uuid.uuid4().hex
        _OPTIONS[key] = env_options
    config = CudaVfEnvConfig.model_validate(
        {
            "taskset": {
                "id": TASKSET_ID,
                "source": source,
                "ids": ids,
                "groups": groups,
                "mode": mode,
            },
            "agent": {
                "runtime": {"type": "subprocess"},
                "harness": harness,
                "max_turns": max_turns,
            },
        }
    )
    return CudaVfEnv(config)
