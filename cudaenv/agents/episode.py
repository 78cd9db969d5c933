"""One episode of the OpenAI-compatible agent as a small state machine.

The sync ``run`` and the async ``arun`` of :class:`~cudaenv.agents.openai_agent.OpenAIAgent`
drive the same :class:`Episode`: it says what to send next (or that the episode must end),
takes each reply, hands back the tool calls to execute and takes their results. Only the
waiting (a blocking or an awaited request, ``env.step`` or a thread) differs between the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from cudaenv.agents.base import finish_trajectory
from cudaenv.agents.turns import assistant_message, turn_from_response

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory

NUDGE = "Please call a tool; call `submit` when you are done."


class EpisodeAgent(Protocol):
    """What an :class:`Episode` reads of its agent (``OpenAIAgent`` is one): its limits and
    how it fits a conversation into its context. A protocol, so this module and the agent's
    import nothing of each other."""

    name: str
    max_turns: int
    training: bool
    context_tokens: int

    def fit_context(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def conversation_tokens(self, messages: list[dict[str, Any]]) -> int: ...


class Episode:
    """The conversation, token usage and per-turn records of one episode.

    In training mode the conversation is append-only: every request's messages extend the
    previous request's exactly (prefix-stable, so the trainer's token ids match what was
    sampled); when it outgrows ``context_tokens`` the episode ends truncated
    (``truncation_reason="context_tokens"``) instead of rewriting history. In evaluation mode
    old tool outputs are elided to fit (the agent's ``fit_context``).
    """

    def __init__(self, agent: EpisodeAgent, env: CudaEnv) -> None:
        self.agent = agent
        self.env = env
        self.messages: list[dict[str, Any]] = env.messages
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "turns": 0}
        self.done = False  # the env ended the episode (submit, step or token limit)
        self.end_reason: str | None = None  # why the agent ends it instead

    def next_request(self) -> list[dict[str, Any]] | None:
        """The messages of the next request; None when the episode is over or must end."""
        if self.done or self.end_reason is not None:
            return None
        if self.usage["turns"] >= self.agent.max_turns:
            self.end_reason = "max_turns"
            return None
        if not self.agent.training:
            return self.agent.fit_context(self.messages)
        if self.agent.conversation_tokens(self.messages) > self.agent.context_tokens:
            self.end_reason = "context_tokens"
            return None
        return [dict(m) for m in self.messages]

    def accept(self, resp: Any) -> list[Any]:
        """Record one reply; return its tool calls (SDK objects) to execute in order."""
        self.usage["turns"] += 1
        if resp.usage is not None:
            self.usage["prompt_tokens"] += resp.usage.prompt_tokens or 0
            self.usage["completion_tokens"] += resp.usage.completion_tokens or 0
            self.usage["total_tokens"] += resp.usage.total_tokens or 0
        # recorded live, so a crash later still shows the spend
        traj = finish_trajectory(self.env, self.agent.name, self.usage)
        msg = resp.choices[0].message
        # every reply as returned (its text and reasoning too); token ids in training mode
        turn = turn_from_response(resp)
        traj.turns.append(turn)
        traj.messages = self.messages
        self.messages.append(assistant_message(turn.message, keep_reasoning=self.agent.training))
        calls = [c for c in msg.tool_calls or [] if getattr(c, "function", None) is not None]
        if not calls:
            self.messages.append({"role": "user", "content": NUDGE})
        return calls

    def observe(self, call: Any, result: tuple[str, float, bool, bool, dict[str, Any]]) -> bool:
        """Take ``env.step(call)``'s result; True when the episode is over (skip the rest)."""
        obs, _, terminated, truncated, _ = result
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})
        self.done = terminated or truncated
        return self.done

    @property
    def must_submit(self) -> bool:
        """The agent ended the episode: the workspace is submitted and graded, as is, with
        ``env.submit(truncation_reason=end_reason)``."""
        return not self.done

    def finish(self) -> Trajectory:
        """The trajectory with the agent's name, usage and conversation."""
        traj = finish_trajectory(self.env, self.agent.name, self.usage)
        traj.messages = [{k: v for k, v in m.items() if k[0] != "_"} for m in self.messages]
        return traj
