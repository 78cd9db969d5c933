"""An installed CLI's model calls through the process-wide gateway (:mod:`cudaenv.gateway`).

Why: the CLI runs in a sandbox without a network, holding a per-episode token instead of the
real key. One :class:`~cudaenv.gateway.Gateway` serves every episode of the process (started
lazily on first use, closed at exit); each episode opens a session (its upstream, the
agent's model pinned, budget and prices), mounts the session's own socket and the forwarder
read-only into its sandbox, starts the forwarder before the CLI, and afterwards reads from
the session, host side only, what the episode did: its steps, calls, usage, cost, budget
reason, and whether the model server or the gateway failed it (:meth:`EpisodeLink.fault`).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from cudaenv.errors import AgentError

if TYPE_CHECKING:
    from cudaenv.gateway import Budget, Gateway, PriceTable, Session

__all__ = ["EpisodeLink", "api_family", "shared_gateway"]

_LOCK = threading.Lock()
_GATEWAY: Gateway | None = None
_GATEWAY_PID = 0  # a forked child has the parent's object but not its thread: start anew


def shared_gateway() -> Gateway:
    """The process's gateway, started on first use (127.0.0.1 and a private Unix socket)."""
    global _GATEWAY, _GATEWAY_PID
    with _LOCK:
        if _GATEWAY is None or os.getpid() != _GATEWAY_PID:
            try:
                from cudaenv.gateway import Gateway
            except ImportError as exc:  # aiohttp: the ``gateway`` extra
                raise AgentError(
                    "running a CLI agent through the model gateway needs aiohttp: install "
                    f"cudaenv[gateway] ({exc})"
                ) from exc
            gateway = Gateway().start()
            atexit.register(gateway.close)
            _GATEWAY, _GATEWAY_PID = gateway, os.getpid()
        return _GATEWAY


def api_family(parser: str) -> Literal["anthropic", "openai"]:
    """Which API a recipe's CLI speaks, known from its event parser.

    >>> api_family("claude-stream-json"), api_family("opencode-json")
    ('anthropic', 'openai')
    """
    return "anthropic" if parser == "claude-stream-json" else "openai"


def upstream_root(family: str, base_url: str) -> str:
    """The upstream API root (what ``/v1/...`` paths continue) for a CLI's ``base_url``.

    >>> upstream_root("anthropic", "http://h:1"), upstream_root("openai", "http://h:1/v1")
    ('http://h:1/v1', 'http://h:1/v1')
    """
    base = base_url.rstrip("/")
    return base + "/v1" if family == "anthropic" and not base.endswith("/v1") else base


class EpisodeLink:
    """One episode's session on the shared gateway and what the sandbox needs to reach it."""

    def __init__(
        self,
        *,
        family: Literal["anthropic", "openai"],
        base_url: str,
        api_key: str | None,
        model: str | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        prices: PriceTable | None = None,
        gateway: Gateway | None = None,
    ) -> None:
        from cudaenv.gateway import SessionConfig, Upstream, sandboxing

        self.gateway = gateway or shared_gateway()
        if self.gateway.socket_path is None:
            raise AgentError("the model gateway has no Unix socket for sandboxes to reach")
        fields: dict[str, Any] = {
            "upstream": Upstream(base_url=upstream_root(family, base_url), api_key=api_key),
            "model": model,  # pinned: a shell in the sandbox cannot call another model
        }
        if budget is not None:
            fields["budget"] = budget
        if prices is not None:
            fields["prices"] = prices
        self.session: Session = self.gateway.open_session(SessionConfig(**fields))
        if self.session.socket_path is None:
            raise AgentError("the model gateway gave the session no Unix socket")
        self.mounts = sandboxing.mounts(self.session.socket_path)  # its own: no one else's
        self.base_url = sandboxing.base_url(family)
        self.forwarder = sandboxing.forwarder_command()

    @property
    def token(self) -> str:
        """The CLI's "API key": valid for this session only, worthless outside the gateway."""
        return self.session.token

    def model_calls(self) -> list[dict[str, Any]]:
        """Every call of the session as JSON-safe dicts (redacted; turns are kept apart)."""
        return [c.model_dump(mode="json", exclude={"turn"}) for c in self.session.calls]

    def usage(self) -> dict[str, int]:
        """Token totals as ``Trajectory.usage`` names them (empty: no call reported usage)."""
        usage = self.session.usage
        if not usage.total:
            return {}
        return usage.model_dump(exclude={"reported"}) | {"total_tokens": usage.total}

    def errors(self) -> list[str]:
        return [c.error for c in self.session.calls if c.error]

    def fault(self) -> str | None:
        """Why the model server or the gateway failed the episode (None: they did not):
        the gateway stopped under it, or its last model call failed on their side."""
        if not self.gateway.serving:
            return "the model gateway stopped during the episode"
        return self.session.infrastructure_fault()

    def close(self) -> None:
        """No more calls are admitted; the records stay readable."""
        self.gateway.close_session(self.session)
