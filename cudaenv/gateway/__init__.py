"""The model gateway for agent CLIs: no network but the model, no key in the sandbox.

A host-side HTTP proxy (:class:`Gateway`, aiohttp) speaking OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages. Each episode gets a :class:`Session` with a random token,
the only thing its sandbox holds; the session maps it to the upstream and the real key,
model-name overrides and budgets (:class:`Budget`), and captures every call
(:class:`CallRecord`: bodies, latency, usage, cost, and the :class:`~cudaenv.env.trajectory.Turn`
with token ids and logprobs when the upstream returns them). The gateway listens on
127.0.0.1 and on a Unix socket; :data:`FORWARDER` is the stdlib script that relays a
sandbox's own loopback port to that socket, and :mod:`cudaenv.gateway.sandboxing` says how a
sandbox without a network mounts and starts it.

``import cudaenv.gateway`` is light: aiohttp loads with :class:`Gateway` (the ``gateway`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cudaenv.gateway.apis import Usage
from cudaenv.gateway.capture import CallRecord
from cudaenv.gateway.config import Budget, Price, PriceTable, SessionConfig, Upstream
from cudaenv.gateway.sandboxing import FORWARDER  # the script, to mount in a sandbox
from cudaenv.gateway.session import TRUNCATION_REASONS, Refusal, Session

__all__ = [
    "FORWARDER",
    "TRUNCATION_REASONS",
    "Budget",
    "CallRecord",
    "Gateway",
    "Price",
    "PriceTable",
    "Refusal",
    "Session",
    "SessionConfig",
    "Upstream",
    "Usage",
]


def __getattr__(name: str) -> Any:
    if name == "Gateway":
        from cudaenv.gateway.server import Gateway

        return Gateway
    raise AttributeError(name)


if TYPE_CHECKING:
    from cudaenv.gateway.server import Gateway
