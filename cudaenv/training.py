"""One training sample from one training-mode trajectory: token ids, loss mask, logprobs.

A multi-turn episode trains as ONE sequence only if every turn's prompt extends the previous
turn's prompt and completion token for token; otherwise the tokens the trainer scores are
not the tokens the model sampled from (retokenization drift). :func:`training_sample` checks
exactly that and raises :class:`~cudaenv.errors.TrajectoryPrefixError` naming the turn and
the first differing position, never returning a silently wrong sample.

Two sources of token ids:

- the server's (no tokenizer): each :class:`~cudaenv.env.trajectory.Turn` holds the
  ``prompt_token_ids`` and ``completion_token_ids`` a training-mode
  :class:`~cudaenv.agents.openai_agent.OpenAIAgent` asked for (vLLM, SGLang). The sample is
  the last turn's prompt and completion; the mask is 1 on every turn's completion.
- a tokenizer's chat template (``tokenizer=``, a ``transformers`` tokenizer): the recorded
  conversation (``Trajectory.messages``) rendered at each turn with the env's tools. Turn
  k's completion is what the template adds for reply k; where the server also returned ids
  they must agree with the template's, and only the sampled tokens are masked in (the
  template's separator after the end-of-turn token is not).

``logprobs`` is per position: the sampled token's logprob under the policy that sampled it,
0.0 outside the completions; None when some turn has none.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from cudaenv.env.trajectory import Trajectory
from cudaenv.errors import TrajectoryPrefixError

__all__ = ["TrainingSample", "renderable", "training_sample"]


class TrainingSample(BaseModel):
    """One episode as a trainer consumes it (all lists the same length)."""

    task_id: str
    input_ids: list[int]
    loss_mask: list[int] = Field(description="1 on tokens the model sampled, 0 elsewhere")
    logprobs: list[float] | None = Field(
        None, description="per position; 0.0 outside the completions; None when unknown"
    )
    reward: float | None = Field(None, description="None: an infrastructure fault, mask it")
    turns: int


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _check_extends(prompt: Sequence[int], before: Sequence[int], turn: int, what: str) -> None:
    if list(prompt[: len(before)]) != list(before):
        at = _first_difference(prompt, before)
        raise TrajectoryPrefixError(
            f"turn {turn}: its prompt does not extend {what} (first difference at token {at} "
            f"of {len(before)}: {list(before[at : at + 5])} expected, "
            f"{list(prompt[at : at + 5])} found); this episode cannot train as one sequence"
        )


def _reward(traj: Trajectory) -> float | None:
    if traj.verdict is not None and traj.verdict.failure == "infrastructure":
        return None
    return float(traj.reward)


def _from_server(traj: Trajectory) -> TrainingSample:
    prev: list[int] | None = None
    spans: list[tuple[int, list[int], list[float] | None]] = []
    for k, turn in enumerate(traj.turns, start=1):
        if turn.prompt_token_ids is None or turn.completion_token_ids is None:
            raise TrajectoryPrefixError(
                f"turn {k} has no token ids (the server returned none): pass a tokenizer to "
                "render the recorded conversation instead"
            )
        if prev is not None:
            _check_extends(turn.prompt_token_ids, prev, k, f"turn {k - 1}'s prompt and completion")
        spans.append(
            (len(turn.prompt_token_ids), turn.completion_token_ids, turn.completion_logprobs)
        )
        prev = turn.prompt_token_ids + turn.completion_token_ids
    assert prev is not None
    return _sample(traj, prev, spans)


def _sample(
    traj: Trajectory,
    ids: list[int],
    spans: Sequence[tuple[int, Sequence[int], Sequence[float] | None]],
) -> TrainingSample:
    mask = [0] * len(ids)
    logprobs: list[float] | None = [0.0] * len(ids)
    for start, completion, lps in spans:
        mask[start : start + len(completion)] = [1] * len(completion)
        if lps is None or len(lps) != len(completion):
            logprobs = None
        elif logprobs is not None:
            logprobs[start : start + len(completion)] = [float(x) for x in lps]
    return TrainingSample(
        task_id=traj.task_id,
        input_ids=ids,
        loss_mask=mask,
        logprobs=logprobs,
        reward=_reward(traj),
        turns=len(spans),
    )


def renderable(message: dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates expect it: tool-call arguments as objects (the JSON the
    model wrote) rather than the API's JSON strings, which templates such as Qwen2.5's would
    encode a second time."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    out = []
    for call in calls:
        fn = dict(call.get("function") or {})
        if isinstance(fn.get("arguments"), str):  # malformed ones stay as the model wrote them
            with contextlib.suppress(json.JSONDecodeError):
                fn["arguments"] = json.loads(fn["arguments"])
        out.append({**call, "function": fn})
    return {**message, "tool_calls": out}


def _ids(rendered: Any) -> list[int]:
    """Token ids from ``apply_chat_template(tokenize=True)`` (a list, or a dict of lists)."""
    if hasattr(rendered, "keys"):
        rendered = rendered["input_ids"]
    return [int(i) for i in rendered]


def _from_template(
    traj: Trajectory, tokenizer: Any, tools: list[dict[str, Any]] | None
) -> TrainingSample:
    if not traj.messages:
        raise TrajectoryPrefixError(
            "the trajectory records no conversation (Trajectory.messages): a model agent "
            "fills it; without it only the server's token ids can make a sample"
        )
    if tools is None:
        from cudaenv.env.tools import tool_schemas

        tools = tool_schemas()
    messages = [renderable(m) for m in traj.messages]
    at = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]

    def render(upto: int, generation: bool) -> list[int]:
        return _ids(
            tokenizer.apply_chat_template(
                messages[:upto], tools=tools, add_generation_prompt=generation, tokenize=True
            )
        )

    spans: list[tuple[int, list[int], list[float] | None]] = []
    full: list[int] = []
    for k, i in enumerate(at, start=1):
        prompt = render(i, True)
        if full:
            _check_extends(prompt, full, k, f"turn {k - 1}'s rendered conversation")
        full = render(i + 1, False)
        _check_extends(full, prompt, k, "its own prompt once its reply is rendered")
        completion = full[len(prompt) :]
        turn = traj.turns[k - 1] if k - 1 < len(traj.turns) else None
        sampled, lps = completion, None
        if turn is not None and turn.completion_token_ids is not None:
            sampled = turn.completion_token_ids
            if completion[: len(sampled)] != sampled:
                raise TrajectoryPrefixError(
                    f"turn {k}: the template renders the reply as other tokens than the ones "
                    f"sampled (first difference at token {_first_difference(completion, sampled)})"
                )
            lps = turn.completion_logprobs
        server_prompt = turn.prompt_token_ids if turn is not None else None
        if server_prompt is not None and server_prompt != prompt:
            raise TrajectoryPrefixError(
                f"turn {k}: the template's prompt differs from the one the server tokenized "
                f"(first difference at token {_first_difference(prompt, server_prompt)})"
            )
        spans.append((len(prompt), sampled, lps))
    if not spans:
        raise TrajectoryPrefixError("the trajectory has no model reply to train on")
    return _sample(traj, full, spans)


def training_sample(
    trajectory: Trajectory | dict[str, Any],
    tokenizer: Any = None,
    *,
    tools: list[dict[str, Any]] | None = None,
) -> TrainingSample:
    """The episode as one training sample (see the module docstring).

    Args:
        trajectory: a :class:`~cudaenv.env.trajectory.Trajectory` or its JSON dict (a line
            of ``trajectories.jsonl``'s ``trajectory``).
        tokenizer: None to use the server's token ids; else a tokenizer with a chat template
            (``apply_chat_template``) to render the recorded conversation.
        tools: the tool schemas the model was shown (default: cudaenv's, ``env.tools``).

    Raises:
        TrajectoryPrefixError: a turn's prompt does not extend the previous one, the
            template disagrees with the server's tokens, or token data is missing.
    """
    traj = (
        trajectory if isinstance(trajectory, Trajectory) else Trajectory.model_validate(trajectory)
    )
    if tokenizer is None:
        if not traj.turns:
            raise TrajectoryPrefixError("the trajectory has no model reply to train on")
        return _from_server(traj)
    return _from_template(traj, tokenizer, tools)
