"""What one gateway session is configured with: the upstream, model names, budgets, prices.

Pydantic models with ``extra="forbid"``, so a misspelt option fails loudly. The upstream's key
is held as a :class:`~pydantic.SecretStr` (never in a ``repr``) or read from a host variable
when the session opens; it is the one credential, and only the gateway ever sees it.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from cudaenv.errors import SpecError

__all__ = ["Budget", "Price", "PriceTable", "SessionConfig", "SessionLimits", "Upstream"]

Auth = Literal["auto", "bearer", "x-api-key", "none"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Upstream(_Model):
    """The model server a session forwards to.

    ``base_url`` is the API root the client's ``/v1/...`` paths continue: a request for
    ``/v1/chat/completions`` goes to ``base_url + "/chat/completions"``. For a local vLLM that
    is ``http://host:8000/v1`` (its Anthropic-compatible ``/v1/messages`` too); for Anthropic
    ``https://api.anthropic.com/v1``.
    """

    base_url: str
    api_key: SecretStr | None = None  # the key itself; else api_key_env
    api_key_env: str | None = None  # host variable holding the key, read when the session opens
    auth: Auth = "auto"  # auto: x-api-key on Anthropic paths, a bearer token on OpenAI ones
    headers: dict[str, str] = Field(default_factory=dict)  # added to every request (redacted)
    timeout_s: float = Field(600.0, gt=0)  # one upstream call, first byte to last

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {value!r}")
        rest = value.split("://", 1)[1]
        if any(c in rest for c in "?#@%\\") or "/." in rest or "//" in rest:
            raise ValueError(
                f"base_url must be a plain origin and path (no query, fragment, credentials, "
                f"escapes or dot segments), got {value!r}"
            )
        return value.rstrip("/")

    def key(self) -> str | None:
        """The key to send (None: no auth header); a named but unset variable is an error."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise SpecError(
                f"the upstream key variable ${self.api_key_env} is not set", field="api_key_env"
            )
        return value


class Budget(_Model):
    """Limits of one episode's model use; None = unlimited. Past one, requests are refused.

    Tokens are held by reservation: a call reserves its output limit (its ``max_tokens``,
    capped to what is left, and sent upstream so capped) before it is forwarded, and the
    reservation is settled with the call's real usage; concurrent calls cannot all spend the
    same tokens. Only a call's input can overrun the budget. A reply that reports no usage
    keeps its whole reservation.
    """

    max_requests: int | None = Field(None, ge=1)  # generation requests forwarded
    max_tokens: int | None = Field(None, ge=1)  # input (cached included) + output, all calls
    wall_time_s: float | None = Field(None, gt=0)  # from the session's opening


class SessionLimits(_Model):
    """What one session may hold of the host at once (the gateway runs in the trainer's
    process: a sandbox must not be able to exhaust its memory or its file descriptors).

    A request body over ``max_body_bytes`` is refused (413) as soon as that much has arrived,
    never read whole; requests past ``max_concurrent_requests`` wait for a slot; connections
    to the session's socket past ``max_connections`` are closed as they are accepted.
    """

    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    max_concurrent_requests: int = Field(8, ge=1)
    max_connections: int = Field(32, ge=1)


class Price(_Model):
    """USD per million tokens; cache prices default to the input price."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(None, ge=0)
    cache_write_per_mtok: float | None = Field(None, ge=0)


class PriceTable(_Model):
    """Prices by model name: an exact name first, then glob patterns (``claude-sonnet-*``)
    in the order given. No prices ship with cudaenv: they change, so the caller sets them."""

    prices: dict[str, Price] = Field(default_factory=dict)

    def price(self, model: str | None) -> Price | None:
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        for pattern, price in self.prices.items():
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """A table from a YAML or JSON file: ``{model: {input_per_mtok: .., ...}}``."""
        source = Path(path)
        try:
            text = source.read_text()
            data = json.loads(text) if source.suffix == ".json" else yaml.safe_load(text)
            return cls(prices=data or {})
        except (OSError, ValueError, yaml.YAMLError) as exc:
            field = None
            if isinstance(exc, ValidationError) and exc.errors():
                field = ".".join(str(p) for p in exc.errors()[0]["loc"][1:])  # below "prices"
            raise SpecError(f"bad price table: {exc}", source=str(source), field=field) from exc


class SessionConfig(_Model):
    """One episode's session (the per-episode token is made by the gateway, not configured).

    ``model`` replaces the model of every request (an agent pins its own: a shell in the
    sandbox cannot call another model through the gateway); else ``model_map`` renames the
    ones it names. ``token_fields`` asks a chat-completions upstream for what a trainer needs
    (``logprobs`` and vLLM's ``return_token_ids``), as the training-mode ``OpenAIAgent`` does;
    ``extra_body`` is merged over every generation request (a None value removes a key).
    ``stream_usage`` asks a streaming chat-completions upstream for its usage
    (``stream_options.include_usage``) when the client did not: without it a streamed chat
    call reports no tokens, so the token budget and the cost would not see it. Such a client
    then reads one more chunk before ``[DONE]``, with ``choices: []`` and the usage, as the API
    defines it; False forwards the stream options as the client sent them.
    """

    upstream: Upstream
    model: str | None = None
    model_map: dict[str, str] = Field(default_factory=dict)
    budget: Budget = Field(default_factory=Budget)
    token_fields: bool = False
    stream_usage: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)
    body_cap_bytes: int = Field(256 * 1024, ge=0)  # per captured request or response body
    limits: SessionLimits = Field(default_factory=SessionLimits)
    prices: PriceTable = Field(default_factory=PriceTable)

    def upstream_model(self, requested: str | None) -> str | None:
        """The model name sent upstream for a request that asked for ``requested``."""
        if self.model is not None:
            return self.model
        if requested is None:
            return None
        return self.model_map.get(requested, requested)
