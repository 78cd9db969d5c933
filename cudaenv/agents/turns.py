"""What a training-mode client asks an OpenAI-compatible server for, and what it keeps.

Sent (training mode only):

- ``logprobs: true``, the OpenAI field: one ``choices[0].logprobs.content[i].logprob`` per
  sampled token (vLLM, SGLang and OpenAI all honour it).
- ``return_token_ids: true`` in the JSON body (``extra_body``): vLLM (0.10.2 and later) then
  returns ``prompt_token_ids`` on the response and ``token_ids`` on each choice; SGLang returns
  both on the choice. A server that rejects the key (api.openai.com answers 400) is served by
  ``extra_body={"return_token_ids": None}``, which removes it from the request.

Read, from the response as the server sent it (the SDK keeps unknown fields):

- ``prompt_token_ids``: the choice's, else the response's.
- ``completion_token_ids``: the choice's ``token_ids``; else, when every logprob token is
  written ``token_id:<n>`` (vLLM's ``--return-tokens-as-token-ids``), those ids.
- ``completion_logprobs``: ``logprobs.content[*].logprob`` as floats.
- ``message``: the assistant message dict exactly as returned, reasoning content
  (``reasoning_content`` or ``reasoning``) included. Both reasoning keys go back into the
  conversation as returned: recent vLLM writes both and reads ``reasoning`` on input, and
  templates such as Qwen3's render the reasoning of the turns since the last user message.
- ``extra``: every other non-OpenAI field of the response and the choice that is not null
  (``stop_reason``, ``kv_transfer_params``, ...).
"""

from __future__ import annotations

from typing import Any

from cudaenv.env.trajectory import Turn

__all__ = ["TRAINING_EXTRA_BODY", "assistant_message", "response_dict", "turn_from_response"]

TRAINING_EXTRA_BODY: dict[str, Any] = {"return_token_ids": True}
REASONING_KEYS = ("reasoning_content", "reasoning")
_RESPONSE_KEYS = {
    "id",
    "object",
    "created",
    "model",
    "choices",
    "usage",
    "system_fingerprint",
    "service_tier",
    "prompt_token_ids",
}
_CHOICE_KEYS = {"index", "message", "finish_reason", "logprobs", "prompt_token_ids", "token_ids"}
_TOKEN_PREFIX = "token_id:"


def response_dict(resp: Any) -> dict[str, Any]:
    """The completion as the JSON the server sent (unknown fields kept, unset ones absent)."""
    if isinstance(resp, dict):
        return resp
    to_dict = getattr(resp, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    return resp.model_dump(exclude_unset=True)


def _ints(value: Any) -> list[int] | None:
    return [int(v) for v in value] if isinstance(value, list) else None


def _ids_from_logprob_tokens(content: list[dict[str, Any]]) -> list[int] | None:
    tokens = [str(e.get("token", "")) for e in content]
    if not tokens or not all(t.startswith(_TOKEN_PREFIX) for t in tokens):
        return None
    try:
        return [int(t[len(_TOKEN_PREFIX) :]) for t in tokens]
    except ValueError:
        return None


def turn_from_response(resp: Any) -> Turn:
    """One :class:`Turn` from a chat completion: token ids, logprobs, the raw message."""
    body = response_dict(resp)
    choice = (body.get("choices") or [{}])[0]
    content = (choice.get("logprobs") or {}).get("content") or []
    completion_ids = _ints(choice.get("token_ids"))
    if completion_ids is None:
        completion_ids = _ids_from_logprob_tokens(content)
    extra = {k: v for k, v in body.items() if k not in _RESPONSE_KEYS and v is not None}
    extra.update({k: v for k, v in choice.items() if k not in _CHOICE_KEYS and v is not None})
    return Turn(
        prompt_token_ids=_ints(choice.get("prompt_token_ids"))
        or _ints(body.get("prompt_token_ids")),
        completion_token_ids=completion_ids,
        completion_logprobs=[float(e["logprob"]) for e in content] if content else None,
        message=dict(choice.get("message") or {}),
        finish_reason=choice.get("finish_reason"),
        extra=extra,
    )


def assistant_message(raw: dict[str, Any], *, keep_reasoning: bool) -> dict[str, Any]:
    """The reply as it goes back into the conversation: role, content, every tool call with
    its id; with ``keep_reasoning`` also the reasoning field, which chat templates render."""
    out: dict[str, Any] = {"role": "assistant", "content": raw.get("content")}
    if keep_reasoning:
        out.update({k: raw[k] for k in REASONING_KEYS if raw.get(k) is not None})
    calls = [
        {
            "id": c.get("id"),
            "type": "function",
            "function": {
                "name": c["function"].get("name"),
                "arguments": c["function"].get("arguments"),
            },
        }
        for c in raw.get("tool_calls") or []
        if c.get("function") is not None
    ]
    if calls:
        out["tool_calls"] = calls
    return out
