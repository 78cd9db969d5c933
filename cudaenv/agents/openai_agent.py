"""A tool-calling agent over any OpenAI-compatible chat-completions endpoint.

The conversation starts as ``env.messages`` (system prompt + task) and the tools are
``env.tools``. The agent keeps its own copy of the conversation afterwards: it is exactly
what the model was sent (its replies verbatim, every tool call with its id), the record that
prefix stability is checked against. Every tool call of a reply goes to ``env.step``
as the SDK object, malformed arguments included: the env answers those with an error
observation, which is the feedback the model needs.

Retries are ours, not the SDK's (``max_retries=0``): rate limits (429), 408, 409, server
errors (5xx), connection failures and timeouts, and unparseable replies back off exponentially
for ``max_attempts`` tries; then :class:`~cudaenv.errors.ModelServerError`: the server's
failure, an infrastructure fault (:mod:`cudaenv.faults`), never the model's. A key or model
name the server refuses (401, 403, 404) is one too, at once; a request refused as malformed
(400, 413, 422: the conversation outgrew the context) is the agent's
(:class:`~cudaenv.errors.AgentError`).

``training=True`` is the mode for RL: history is never rewritten (each request extends the
previous one exactly; an episode that outgrows ``context_tokens`` ends truncated with
``truncation_reason="context_tokens"``), token ids and logprobs are requested and every reply
is recorded as a :class:`~cudaenv.env.trajectory.Turn` in ``Trajectory.turns``; which fields
are sent and read is in :mod:`cudaenv.agents.turns`. ``arun`` is the same loop for asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from cudaenv.agents.episode import NUDGE, Episode
from cudaenv.agents.sampling import DEFAULT_SAMPLING, Sampling
from cudaenv.agents.turns import TRAINING_EXTRA_BODY
from cudaenv.env.tokens import count_tokens
from cudaenv.errors import AgentError, MissingExtraError, ModelServerError, SpecError
from cudaenv.faults import retryable_status, status_fault

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory

__all__ = ["NUDGE", "OpenAIAgent"]

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
        temperature / top_p / seed / max_output_tokens: sampling, sent with every request
            (:class:`~cudaenv.agents.sampling.Sampling` documents the defaults: temperature
            and top_p 1.0; ``max_output_tokens`` and ``seed`` not sent unless given; with a
            seed S, the episode run with ``seed=a`` sends S + a). ``sampling`` gives them as
            one object instead.
        max_turns: model replies per episode; a reply without tool calls counts too. When
            they run out the workspace is submitted and the trajectory marked truncated.
        max_attempts: tries per model request before ModelServerError.
        backoff_s / max_backoff_s: first retry delay, doubled per try, capped.
        context_tokens: conversation budget; the oldest tool outputs are elided beyond it
            (the system prompt and the task are never touched).
        request_timeout_s: per-request HTTP timeout.
        extra_body: extra JSON fields for the request (server-specific sampling options);
            in training mode merged over ``{"return_token_ids": True}``, a None value drops
            a key.
        training: RL mode (module docstring): prefix-stable requests, ``logprobs=True``,
            token ids asked for, ``Trajectory.turns`` recorded. False: evaluation, as before.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float | None = DEFAULT_SAMPLING.temperature,
        top_p: float | None = DEFAULT_SAMPLING.top_p,
        seed: int | None = None,
        sampling: Sampling | Mapping[str, Any] | None = None,
        max_turns: int = 50,
        max_attempts: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        context_tokens: int = 100_000,
        request_timeout_s: float = 600.0,
        max_output_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        name: str = "openai",
        training: bool = False,
    ) -> None:
        for field, value in (
            ("max_turns", max_turns),
            ("max_attempts", max_attempts),
            ("context_tokens", context_tokens),
        ):
            if value < 1:
                raise SpecError(f"{field} must be >= 1, got {value}", field=field)
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        if sampling is None:
            sampling = {"temperature": temperature, "top_p": top_p, "seed": seed}
            sampling["max_tokens"] = max_output_tokens
        self.sampling = _sampling(sampling)
        self.max_turns = max_turns
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.context_tokens = context_tokens
        self.request_timeout_s = request_timeout_s
        self.extra_body = dict(extra_body or {})
        self.name = name
        self.training = training
        self._client: Any = None
        self._aclient: tuple[Any, Any] | None = None  # (event loop, AsyncOpenAI) it belongs to

    # ------------------------------------------------------------------ client
    def _client_options(self) -> dict[str, Any]:
        key = os.environ.get(self.api_key_env)
        if not key:
            if self.base_url is None:
                raise AgentError(
                    f"no API key: set ${self.api_key_env} (or pass base_url for a local server)"
                )
            key = "sk-local-dummy"
        return {
            "api_key": key,
            "base_url": self.base_url,
            "max_retries": 0,
            "timeout": self.request_timeout_s,
        }

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = _openai().OpenAI(**self._client_options())
        return self._client

    def _get_async_client(self) -> Any:
        """An ``AsyncOpenAI`` for the running loop (its connections cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aclient[0] is not loop:
            self._aclient = (loop, _openai().AsyncOpenAI(**self._client_options()))
        return self._aclient[1]

    async def aclose(self) -> None:
        """Close the async client's connections (a later ``arun`` opens new ones)."""
        if self._aclient is not None:
            _, client = self._aclient
            self._aclient = None
            await client.close()

    def _delay(self, attempt: int, exc: BaseException) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = min(self.max_backoff_s, max(delay, float(retry_after)))
        return delay * (0.5 + random.random() / 2)  # jitter so parallel workers spread out

    @property
    def temperature(self) -> float | None:
        return self.sampling.temperature

    @property
    def max_output_tokens(self) -> int | None:
        return self.sampling.max_tokens

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        episode_seed: int | None = None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            **self.sampling.request_fields(episode_seed),
        }
        body = {**TRAINING_EXTRA_BODY, **self.extra_body} if self.training else self.extra_body
        body = {k: v for k, v in body.items() if v is not None}
        if body:
            kwargs["extra_body"] = body
        if self.training:
            kwargs["logprobs"] = True
        return kwargs

    @staticmethod
    def _checked(resp: Any) -> Any:
        if not getattr(resp, "choices", None) or getattr(resp.choices[0], "message", None) is None:
            raise _BadResponse(f"not a chat completion: {str(resp)[:200]!r}")
        return resp

    def _retry_delay(self, exc: Exception, attempt: int) -> float:
        """Seconds to wait before the next try; raises (module docstring) when there is none."""
        openai = _openai()
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        transient = (status is not None and retryable_status(status)) or isinstance(
            exc,
            openai.APIConnectionError  # timeouts included
            | openai.APIResponseValidationError
            | json.JSONDecodeError
            | _BadResponse,
        )
        if transient:
            if attempt < self.max_attempts:
                return self._delay(attempt, exc)
            raise ModelServerError(
                f"model request failed after {self.max_attempts} attempts: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if status is not None:
            message = getattr(exc, "message", str(exc))
            if status_fault(status) == "infrastructure":
                raise ModelServerError(
                    f"the model server refused the request ({status}): {message}"
                ) from exc
            raise AgentError(f"model request rejected ({status}): {message}") from exc
        raise exc

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        episode_seed: int | None = None,
    ) -> Any:
        """One chat completion, retried per the policy in the module docstring
        (``episode_seed`` offsets the sampling seed, when one is set)."""
        client, kwargs = self._get_client(), self._request(messages, tools, episode_seed)
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self._checked(client.chat.completions.create(**kwargs))
            except Exception as exc:  # _retry_delay re-raises what is not ours to retry
                time.sleep(self._retry_delay(exc, attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        episode_seed: int | None = None,
    ) -> Any:
        """:meth:`complete` through ``AsyncOpenAI``, same retry policy."""
        client = self._get_async_client()
        kwargs = self._request(messages, tools, episode_seed)
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self._checked(await client.chat.completions.create(**kwargs))
            except Exception as exc:
                await asyncio.sleep(self._retry_delay(exc, attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    # ------------------------------------------------------------------ context budget
    @staticmethod
    def _tokens(msg: dict[str, Any]) -> int:
        n = PER_MESSAGE_TOKENS + count_tokens(msg.get("content") or "")
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            n += count_tokens(fn.get("name", "")) + count_tokens(fn.get("arguments", ""))
        return n

    def conversation_tokens(self, messages: list[dict[str, Any]]) -> int:
        """The conversation's size as the context budget counts it (an estimate)."""
        return sum(self._tokens(m) for m in messages)

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
    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        self._get_client()  # a missing SDK or key fails before a sandbox is opened
        env.reset(seed=seed)
        tools, ep = env.tools, Episode(self, env)
        while (messages := ep.next_request()) is not None:
            resp = self.complete(messages, tools, seed)
            for call in ep.accept(resp):
                if ep.observe(call, env.step(call)):
                    break
        if ep.must_submit:
            env.submit(truncation_reason=ep.end_reason)
        return ep.finish()

    async def arun(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        """:meth:`run` on the event loop: requests through ``AsyncOpenAI``, env calls through
        the env's ``areset``/``astep`` where it has them, else a worker thread. Per-episode
        state lives in an :class:`Episode`, so many ``arun`` may share one agent. Connections
        are pooled across episodes: ``await agent.aclose()`` before the loop ends."""
        self._get_async_client()
        await _call(env, "reset", seed=seed)
        tools, ep = env.tools, Episode(self, env)
        while (messages := ep.next_request()) is not None:
            resp = await self.acomplete(messages, tools, seed)
            for call in ep.accept(resp):
                if ep.observe(call, await _call(env, "step", call)):
                    break
        if ep.must_submit:
            await _call(env, "submit", truncation_reason=ep.end_reason)
        return ep.finish()


def _sampling(value: Sampling | Mapping[str, Any]) -> Sampling:
    """``value`` as a :class:`Sampling`; a SpecError naming the bad field."""
    if isinstance(value, Sampling):
        return value
    try:
        return Sampling.model_validate(dict(value))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise SpecError(f"bad sampling option {field}: {err['msg']}", field=field) from None


async def _call(env: CudaEnv, name: str, *args: Any, **kwargs: Any) -> Any:
    """``env.a<name>`` when the env is async-capable, else ``env.<name>`` in a thread."""
    native = getattr(env, f"a{name}", None)
    if native is not None:
        return await native(*args, **kwargs)
    return await asyncio.to_thread(getattr(env, name), *args, **kwargs)
