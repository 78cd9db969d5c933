"""A tool-calling agent over any OpenAI-compatible chat-completions endpoint.

The conversation starts as ``env.messages`` (system prompt + task) and the tools are
``env.tools``. The agent keeps its own copy of the conversation afterwards because the
model must see its replies verbatim (text and every tool call with its id), which the env's
one-call-per-message record does not keep. Every tool call of a reply goes to ``env.step``
as the SDK object, malformed arguments included: the env answers those with an error
observation, which is the feedback the model needs.

Retries are ours, not the SDK's (``max_retries=0``): rate limits (429), server errors (5xx),
connection failures and unparseable replies back off exponentially for ``max_attempts``
tries; then :class:`~cudaenv.errors.AgentError`. Other client errors (400, 401) fail at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from typing import TYPE_CHECKING, Any

from cudaenv.agents.base import finish_trajectory
from cudaenv.env.tokens import count_tokens
from cudaenv.errors import AgentError, MissingExtraError

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory

NUDGE = "Please call a tool; call `submit` when you are done."
ELIDED = "[elided: {tokens} tokens of old tool output, dropped to stay inside the context budget]"
PER_MESSAGE_TOKENS = 4  # role and separators, as OpenAI counts them


class _BadResponse(Exception):
    """The server answered 2xx with something that is not a chat completion."""


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingExtraError("openai", "openai") from None
    return openai


class OpenAIAgent:
    """Drives a CudaEnv with a chat model that calls tools.

    Args:
        model: the model name the endpoint serves.
        base_url: the endpoint (``http://host:port/v1``); None = api.openai.com.
        api_key_env: name of the env var holding the key; with ``base_url`` set and the var
            unset, a dummy key is sent (local servers ignore it).
        temperature: sampling temperature.
        max_turns: model replies per episode; a reply without tool calls counts too. When
            they run out the workspace is submitted and the trajectory marked truncated.
        max_attempts: tries per model request before AgentError.
        backoff_s / max_backoff_s: first retry delay, doubled per try, capped.
        context_tokens: conversation budget; the oldest tool outputs are elided beyond it
            (the system prompt and the task are never touched).
        request_timeout_s: per-request HTTP timeout.
        max_output_tokens: ``max_tokens`` per reply (None: the server's default).
        extra_body: extra JSON fields for the request (server-specific sampling options).
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_turns: int = 50,
        max_attempts: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        context_tokens: int = 100_000,
        request_timeout_s: float = 600.0,
        max_output_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        name: str = "openai",
    ) -> None:
        if max_turns < 1 or max_attempts < 1:
            raise ValueError("max_turns and max_attempts must be >= 1")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_turns = max_turns
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.context_tokens = context_tokens
        self.request_timeout_s = request_timeout_s
        self.max_output_tokens = max_output_tokens
        self.extra_body = dict(extra_body or {})
        self.name = name
        self._client: Any = None

    # ------------------------------------------------------------------ client
    def _get_client(self) -> Any:
        if self._client is None:
            openai = _openai()
            key = os.environ.get(self.api_key_env)
            if not key:
                if self.base_url is None:
                    raise AgentError(
                        f"no API key: set ${self.api_key_env} (or pass base_url for a local server)"
                    )
                key = "sk-local-dummy"
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.request_timeout_s
            )
        return self._client

    def _delay(self, attempt: int, exc: BaseException) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = min(self.max_backoff_s, max(delay, float(retry_after)))
        return delay * (0.5 + random.random() / 2)  # jitter so parallel workers spread out

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """One chat completion, retried per the policy in the module docstring."""
        openai = _openai()
        client = self._get_client()
        retryable = (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APIConnectionError,
            openai.APIResponseValidationError,
            json.JSONDecodeError,
            _BadResponse,
        )
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "temperature": self.temperature,
        }
        if self.max_output_tokens is not None:
            kwargs["max_tokens"] = self.max_output_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        last: BaseException | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                resp = client.chat.completions.create(**kwargs)
                if (
                    not getattr(resp, "choices", None)
                    or getattr(resp.choices[0], "message", None) is None
                ):
                    raise _BadResponse(f"not a chat completion: {str(resp)[:200]!r}")
                return resp
            except retryable as exc:
                last = exc
                if attempt < self.max_attempts:
                    time.sleep(self._delay(attempt, exc))
            except openai.APIStatusError as exc:
                raise AgentError(
                    f"model request rejected ({exc.status_code}): {exc.message}"
                ) from exc
        raise AgentError(
            f"model request failed after {self.max_attempts} attempts: {type(last).__name__}: {last}"
        ) from last

    # ------------------------------------------------------------------ context budget
    @staticmethod
    def _tokens(msg: dict[str, Any]) -> int:
        n = PER_MESSAGE_TOKENS + count_tokens(msg.get("content") or "")
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            n += count_tokens(fn.get("name", "")) + count_tokens(fn.get("arguments", ""))
        return n

    def fit_context(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Elide the oldest tool outputs (in place, so the prefix stays stable) until the
        conversation fits ``context_tokens``; the first two messages are never touched."""
        sizes = [self._tokens(m) for m in messages]
        total = sum(sizes)
        for i in range(2, len(messages)):
            if total <= self.context_tokens:
                break
            msg = messages[i]
            if msg.get("role") != "tool" or msg.get("_elided"):
                continue
            msg["content"] = ELIDED.format(tokens=sizes[i] - PER_MESSAGE_TOKENS)
            msg["_elided"] = True
            new = self._tokens(msg)
            total += new - sizes[i]
            sizes[i] = new
        return [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]

    # ------------------------------------------------------------------ episode
    @staticmethod
    def _assistant(msg: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": msg.content}
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in msg.tool_calls or []
            if getattr(c, "function", None) is not None
        ]
        if calls:
            out["tool_calls"] = calls
        return out

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        self._get_client()  # a missing SDK or key fails before a sandbox is opened
        env.reset(seed=seed)
        tools = env.tools
        messages = env.messages
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "turns": 0}
        done = False
        for _ in range(self.max_turns):
            resp = self.complete(self.fit_context(messages), tools)
            usage["turns"] += 1
            if resp.usage is not None:
                usage["prompt_tokens"] += resp.usage.prompt_tokens or 0
                usage["completion_tokens"] += resp.usage.completion_tokens or 0
                usage["total_tokens"] += resp.usage.total_tokens or 0
            finish_trajectory(env, self.name, usage)  # live: a crash later still shows the spend
            msg = resp.choices[0].message
            messages.append(self._assistant(msg))
            if not msg.tool_calls:
                messages.append({"role": "user", "content": NUDGE})
                continue
            for call in msg.tool_calls:
                obs, _, term, trunc, _ = env.step(call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})
                if term or trunc:
                    done = True
                    break
            if done:
                break
        if not done:  # turn budget spent: grade what is there, and say so
            env.step({"tool": "submit", "args": {}})
            traj = env.trajectory
            if traj is not None:
                traj.terminated, traj.truncated, traj.truncation_reason = False, True, "max_turns"
        return finish_trajectory(env, self.name, usage)
