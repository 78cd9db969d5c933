"""One episode's session: its token, its upstream, its budgets and every call it made.

The sandbox only ever holds the session's token (its "API key"); the gateway maps it to the
upstream and the real key. Each generation request is admitted against the budget before it
is forwarded; past a budget it is refused (the gateway answers in the API's own error shape)
and the session keeps the reason as :attr:`Session.truncation_reason`, one of
:data:`TRUNCATION_REASONS`, for the env to end the episode truncated. Budgets are checked at
admission: a call in flight finishes (its tokens may overrun ``max_tokens``), except that the
wall time also bounds the call itself.

Records are appended by the gateway's event loop and read from any thread (a lock guards
them); the clock is injectable so budget tests need no sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cudaenv.env.trajectory import Turn
from cudaenv.gateway.apis import Usage
from cudaenv.gateway.capture import CallRecord, cost_usd
from cudaenv.gateway.config import SessionConfig
from cudaenv.gateway.redact import Redactor

__all__ = ["TRUNCATION_REASONS", "Refusal", "Session"]

#: why a session stopped admitting calls, as ``Trajectory.truncation_reason``
TRUNCATION_REASONS = ("gateway_requests", "gateway_tokens", "gateway_time")


@dataclass(frozen=True)
class Refusal:
    """A request the session will not forward: HTTP status, message, truncation reason."""

    status: int
    message: str
    reason: str | None  # None: not a budget (the session is closed)


class Session:
    """Created by :meth:`Gateway.open_session <cudaenv.gateway.server.Gateway.open_session>`."""

    def __init__(
        self, token: str, config: SessionConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.token = token
        self.config = config
        self.key = config.upstream.key()  # read now: a missing variable fails at opening
        self.clock = clock
        self.opened_at = clock()
        self.redactor = Redactor([self.key, token, *config.upstream.headers.values()])
        self.truncation_reason: str | None = None
        self.closed = False
        self._admitted = 0
        self._usage = Usage()
        self._cost = 0.0
        self._unpriced = 0
        self._calls: list[CallRecord] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ budget
    def remaining_s(self) -> float | None:
        """Wall time left (None: no wall-time budget)."""
        limit = self.config.budget.wall_time_s
        return None if limit is None else limit - (self.clock() - self.opened_at)

    def _spent(self) -> tuple[str, str] | None:
        budget = self.config.budget
        if budget.max_requests is not None and self._admitted >= budget.max_requests:
            return "gateway_requests", f"its budget of {budget.max_requests} model requests"
        if budget.max_tokens is not None and self._usage.total >= budget.max_tokens:
            return "gateway_tokens", (
                f"its budget of {budget.max_tokens} tokens ({self._usage.total} used)"
            )
        left = self.remaining_s()
        if left is not None and left <= 0:
            return "gateway_time", f"its wall-time budget of {budget.wall_time_s:g} s"
        return None

    def admit(self) -> Refusal | None:
        """Count one generation request in, or say why not (and record the reason)."""
        with self._lock:
            if self.closed:
                return Refusal(401, "cudaenv gateway: this episode's session is closed", None)
            spent = self._spent()
            if spent is None:
                self._admitted += 1
                return None
            reason, what = spent
            self.truncation_reason = self.truncation_reason or reason
        return Refusal(
            400,
            f"cudaenv gateway: this episode has used up {what}; no more model calls are "
            f"allowed, the episode ends here (truncated: {reason})",
            reason,
        )

    def trip(self, reason: str) -> None:
        """Record a budget reason found outside :meth:`admit` (a call cut at the wall time)."""
        with self._lock:
            self.truncation_reason = self.truncation_reason or reason

    # ------------------------------------------------------------------ records
    def record(self, **fields: Any) -> CallRecord:
        """Append one call (its index and cost filled in here) and count its tokens."""
        if fields.get("error"):
            fields["error"] = self.redactor.text(fields["error"])
        usage: Usage = fields.get("usage") or Usage()
        fields["usage"] = usage
        model = fields.get("response_model") or fields.get("model")
        price = self.config.prices.price(model) or self.config.prices.price(fields.get("model"))
        cost = cost_usd(usage, price) if usage.total else (0.0 if price else None)
        with self._lock:
            call = CallRecord(index=len(self._calls), cost_usd=cost, **fields)
            self._calls.append(call)
            self._usage = self._usage + usage
            if cost is not None:
                self._cost += cost
            elif usage.total:
                self._unpriced += 1
        return call

    @property
    def calls(self) -> list[CallRecord]:
        with self._lock:
            return list(self._calls)

    def turns(self) -> list[Turn]:
        """One :class:`Turn` per successful generation call, in the order they finished."""
        return [c.turn for c in self.calls if c.turn is not None]

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    @property
    def cost_usd(self) -> float | None:
        """The priced calls' cost; None when a call with tokens had no price."""
        with self._lock:
            return None if self._unpriced else self._cost

    def summary(self) -> dict[str, Any]:
        """JSON-safe totals of the session (for a run's summary)."""
        calls, usage = self.calls, self.usage
        return {
            "requests": sum(1 for c in calls if c.api is not None and c.refused is None),
            "refused": sum(1 for c in calls if c.refused is not None),
            "errors": sum(1 for c in calls if c.error is not None),
            "usage": usage.model_dump(exclude={"reported"}) | {"total_tokens": usage.total},
            "cost_usd": self.cost_usd,
            "unpriced_calls": self._unpriced,
            "truncation_reason": self.truncation_reason,
        }

    def close(self) -> None:
        """No more requests are admitted (the episode is over)."""
        with self._lock:
            self.closed = True
