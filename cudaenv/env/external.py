"""The public boundary for episodes driven from outside the env's own tool loop.

A coding-agent CLI (and, next, a model gateway or a trainer's adapter) runs its own tools
against ``env.sandbox`` instead of sending replies to :meth:`CudaEnv.step`. It still needs
the env to say what the task is, to keep the record, and to grade. The three calls:

1. after ``reset``, :attr:`~ExternalDriving.instruction`: the task as data
   (:class:`Instruction`: the task text without the env's tool list, the start files, the
   env's tool schemas) instead of text to re-parse;
2. :meth:`~ExternalDriving.record_step` for each step the driver ran: a
   :class:`ExternalStep` (tool, arguments, observation, tokens and usage where known) goes
   into ``env.trajectory`` and ``env.messages`` as one record, like a step of the env's own;
   :meth:`~ExternalDriving.record_usage` adds usage known only as totals;
3. :meth:`~ExternalDriving.submit`: grades the workspace and returns the same terminal
   ``(obs, reward, terminated, truncated, info)`` as ``step`` of a ``submit`` call; with a
   ``truncation_reason`` (the driver's time or turn limit ended the run) the episode is
   graded all the same but ends truncated with that reason.

The driver never writes ``env.trajectory`` itself, so a record cannot be half updated.
A driver that needs something mounted into the episode's sandbox (the model gateway's socket)
opens the episode inside :meth:`~ExternalDriving.sandbox_mounts`; it records the calls its
gateway served with :meth:`~ExternalDriving.record_model_calls`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cudaenv.env.messages import external_messages
from cudaenv.env.text import clip, to_charset
from cudaenv.env.tokens import count_tokens
from cudaenv.env.trajectory import StepRecord, Trajectory, Turn
from cudaenv.errors import CudaEnvError
from cudaenv.problems.model import Mode, SourceFile

if TYPE_CHECKING:
    from cudaenv.env.aio import Offloader

__all__ = ["ExternalDriving", "ExternalStep", "Instruction", "StepResult"]

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
SUBMIT: dict[str, Any] = {"tool": "submit", "args": {}}


class Instruction(BaseModel):
    """What an episode asks, as data (set by every ``reset``).

    ``text`` is exactly the observation ``reset`` returned: ``task`` followed by the env's
    tools. A driver that brings its own tools shows its model ``task``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    mode: Mode
    task: str = Field(description="the instruction without the list of the env's tools")
    files: list[SourceFile] = Field(description="the files the workspace starts with, by path")
    tools: list[dict[str, Any]] = Field(description="the env's tools as OpenAI function schemas")
    text: str = Field(description="the instruction reset returned (task, then the tools)")


class ExternalStep(BaseModel):
    """One step a driver ran with its own tools, or one piece of its model's text.

    ``tool`` None means assistant text, held in ``args["text"]``. ``tokens`` is the
    observation's token count if the driver knows it (else it is counted, as for ``step``,
    when the env has a ``max_tokens`` budget); ``usage`` is the model usage of the reply
    that made this step, added to ``trajectory.usage``.
    """

    model_config = ConfigDict(extra="forbid")

    tool: str | None
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    observation: str = ""
    error: str | None = None
    duration_s: float = Field(default=0.0, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    usage: dict[str, int] = Field(default_factory=dict)


class ExternalDriving:
    """:class:`~cudaenv.env.core.CudaEnv`'s calls for a driver with its own tools (see the
    module docstring). The env provides the state below; nothing here touches a sandbox."""

    trajectory: Trajectory | None
    max_tokens: int | None
    _sandbox_spec: Any
    _sandbox_options: dict[str, Any]
    _instruction: Instruction | None
    _messages: list[dict[str, Any]]
    _done: bool
    _offload: Offloader
    _step: Callable[..., StepResult]  # CudaEnv's step, with an end reason for submit

    def _live_trajectory(self, what: str) -> Trajectory:
        if self._done or self.trajectory is None:
            raise CudaEnvError(f"{what}: the episode is over (or never started); call reset()")
        return self.trajectory

    @property
    def instruction(self) -> Instruction:
        """The current episode's :class:`Instruction`; CudaEnvError before the first reset."""
        if self._instruction is None:
            raise CudaEnvError("call reset() before reading the instruction")
        return self._instruction

    @property
    def sandbox_network(self) -> bool:
        """Whether the env's sandboxes are asked for the network (``sandbox_options``)."""
        return bool(self._sandbox_options.get("network"))

    @contextlib.contextmanager
    def sandbox_mounts(self, ro_mounts: Mapping[str, str]) -> Iterator[None]:
        """Sandboxes opened inside the block (by ``reset``) also get ``ro_mounts``
        (host path -> inside path, read-only; the sandbox option of that name). Grading
        sandboxes, opened later, never get them. Raises CudaEnvError when the env's sandbox
        is a factory (its options are not the env's to extend)."""
        if callable(self._sandbox_spec):
            raise CudaEnvError(
                "this env's sandbox is a factory: it cannot be given extra mounts; make the env "
                "with a backend name (sandbox='local' or 'docker')"
            )
        saved = self._sandbox_options
        mounts = [*(saved.get("ro_mounts") or []), *ro_mounts.items()]
        self._sandbox_options = {**saved, "ro_mounts": mounts}
        try:
            yield
        finally:
            self._sandbox_options = saved

    def record_turns(self, turns: list[Turn]) -> None:
        """Append model replies (token ids, logprobs, the message) captured outside the env."""
        self._live_trajectory("record_turns").turns.extend(turns)

    def record_model_calls(self, calls: list[dict[str, Any]]) -> None:
        """Append per-call records of the episode's model calls (JSON-safe dicts, redacted)."""
        self._live_trajectory("record_model_calls").model_calls.extend(calls)

    def record_step(self, step: ExternalStep | Mapping[str, Any]) -> StepRecord:
        """Record one step the driver ran itself; returns the trajectory's new record.

        The observation is clipped and mapped to the charset as ``step`` does. A tool step
        becomes an assistant message with one tool call, then its ``tool`` message; a text
        step becomes an assistant message. The episode does not end here (the driver ends it
        with :meth:`submit`), and no env budget (``max_steps``, ``max_tokens``) is applied:
        the driver runs its own. Raises CudaEnvError when no episode is running.
        """
        traj = self._live_trajectory("record_step")
        step = step if isinstance(step, ExternalStep) else ExternalStep.model_validate(step)
        observation = to_charset(clip(step.observation))
        tokens = step.tokens
        if tokens is None:
            tokens = count_tokens(observation) if self.max_tokens else 0
        call_id = step.call_id
        if call_id is None and step.tool is not None:
            call_id = f"ext_{len(traj.steps)}"
        record = StepRecord(
            index=len(traj.steps),
            tool=step.tool,
            args=step.args,
            call_id=call_id,
            observation=observation,
            error=step.error,
            duration_s=round(step.duration_s, 6),
            tokens=tokens,
        )
        traj.steps.append(record)
        traj.observation_tokens += tokens
        self._messages += external_messages(record)
        self.record_usage(step.usage)
        return record

    def record_usage(self, usage: Mapping[str, int], *, cost_usd: float | None = None) -> None:
        """Add model usage (token counts by name) and cost known only as the run's totals."""
        traj = self._live_trajectory("record_usage")
        for key, value in usage.items():
            traj.usage[key] = traj.usage.get(key, 0) + int(value)
        if cost_usd is not None:
            traj.cost_usd = (traj.cost_usd or 0.0) + float(cost_usd)

    def submit(self, truncation_reason: str | None = None) -> StepResult:
        """End the episode: grade the workspace, as a ``submit`` call of :meth:`step` does.

        Returns the terminal ``(obs, reward, terminated, truncated, info)`` of ``step``
        (its docstring lists every ``info`` key). With ``truncation_reason`` (say
        "time_limit" or "max_turns": the driver's own limit stopped it) the workspace is
        graded all the same, and the episode ends ``terminated=False, truncated=True`` with
        ``info["truncation_reason"]`` and ``trajectory.truncation_reason`` set to it.
        """
        self._live_trajectory("submit")
        if truncation_reason == "":
            raise CudaEnvError("truncation_reason must be None or a non-empty string")
        return self._step(SUBMIT, end_reason=truncation_reason)

    async def asubmit(self, truncation_reason: str | None = None) -> StepResult:
        """:meth:`submit` on the shared bounded thread pool (:mod:`cudaenv.env.aio`)."""
        return await self._offload.run(self.submit, truncation_reason)
