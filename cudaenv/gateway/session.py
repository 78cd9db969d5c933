"""One episode's session: its token, its upstream, its budgets and every call it made.

The sandbox only ever holds the session's token (its "API key"); the gateway maps it to the
upstream and the real key. Each generation request is admitted against the budget before it
is forwarded; past a budget it is refused (the gateway answers in the API's own error shape)
and the session keeps the reason as :attr:`Session.truncation_reason`, one of
:data:`TRUNCATION_REASONS`, for the env to end the episode truncated. Tokens are held by
reservation (:class:`~cudaenv.gateway.config.Budget`): an admitted call reserves its output
limit, capped to what is left, and :meth:`Session.record` settles it with the real usage;
the wall time also bounds the call itself.

The session also knows, from its records alone, whether the episode was cut short by the
model server or the gateway (:meth:`Session.infrastructure_fault`) and what the agent did
(:meth:`Session.steps`, :mod:`cudaenv.gateway.steps`): a CLI episode's record comes from
here, never from files inside its sandbox.

Records are appended by the gateway's event loop and read from any thread (a lock guards
them); the clock is injectable so budget tests need no sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaenv.env.external import ExternalStep
from cudaenv.env.trajectory import Turn
from cudaenv.gateway.apis import Usage
from cudaenv.gateway.capture import CallRecord, cost_usd
from cudaenv.gateway.config import SessionConfig
from cudaenv.gateway.redact import Redactor
from cudaenv.gateway.steps import NO_RESULT, call_ids, turn_steps

__all__ = ["TRUNCATION_REASONS", "Grant", "Refusal", "Session"]

#: why a session stopped admitting calls, as ``Trajectory.truncation_reason``
TRUNCATION_REASONS = ("gateway_requests", "gateway_tokens", "gateway_time")


@dataclass(frozen=True)
class Refusal:
    """A request the session will not forward: HTTP status, message, truncation reason."""

    status: int
    message: str
    reason: str | None  # None: not a budget (the session is closed)


@dataclass(frozen=True)
class Grant:
    """An admitted call: the tokens it holds until :meth:`Session.record` settles them, and
    the output limit to send upstream (None: leave the client's)."""

    reserved: int = 0
    cap: int | None = None


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
        self._reserved = 0  # tokens held by calls in flight
        self._unreported = 0  # reservations kept by replies that reported no usage
        self._in_flight = 0
        self._open_calls: dict[str, None] = {}  # tool calls whose results are not seen yet
        self.refused_connections = 0  # connections past the session's limit (the listener's)
        self.socket_path: Path | None = None  # its own Unix socket (set by the gateway)
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
        if budget.max_tokens is not None and self._held() >= budget.max_tokens:
            held = f", {self._reserved} held by calls in flight" if self._reserved else ""
            return "gateway_tokens", (
                f"its budget of {budget.max_tokens} tokens ({self._usage.total} used{held})"
            )
        left = self.remaining_s()
        if left is not None and left <= 0:
            return "gateway_time", f"its wall-time budget of {budget.wall_time_s:g} s"
        return None

    def _held(self) -> int:
        return self._usage.total + self._reserved + self._unreported

    def admit(self, requested: int | None = None) -> Refusal | Grant:
        """Count one generation request in, reserving its output limit (``requested``: the
        request's own, None when it sets none), or say why not (and record the reason)."""
        with self._lock:
            if self.closed:
                return Refusal(401, "cudaenv gateway: this episode's session is closed", None)
            spent = self._spent()
            if spent is None:
                self._admitted += 1
                self._in_flight += 1
                limit = self.config.budget.max_tokens
                if limit is None:
                    return Grant()
                left = limit - self._held()
                cap = left if requested is None else max(1, min(requested, left))
                self._reserved += cap
                return Grant(reserved=cap, cap=cap if cap != requested else None)
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
    def open_calls(self) -> list[str]:
        """Ids of the tool calls the model made whose results no request has carried yet."""
        with self._lock:
            return list(self._open_calls)

    def record(self, *, grant: Grant | None = None, **fields: Any) -> CallRecord:
        """Append one call (its index and cost filled in here), count its tokens and settle
        its reservation (``grant``: it was admitted)."""
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
            if grant is not None:
                self._in_flight -= 1
                self._reserved -= grant.reserved
                if not usage.reported:  # unknown spend: the reservation stays spent
                    self._unreported += grant.reserved
            for call_id in call.tool_results:
                self._open_calls.pop(call_id, None)
            if call.turn is not None and call.agent_turn and call.api is not None:
                self._open_calls.update(dict.fromkeys(call_ids(call.api, call.turn.message)))
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

    def agent_turns(self) -> int:
        """Replies the model gave to the agent's own requests (those offering tools)."""
        return sum(1 for c in self.calls if c.turn is not None and c.agent_turn)

    def steps(self) -> list[ExternalStep]:
        """The agent's steps, from the captured calls alone (:mod:`cudaenv.gateway.steps`)."""
        calls = self.calls
        results = {k: v for c in calls for k, v in c.tool_results.items()}
        out: list[ExternalStep] = []
        for call in calls:
            if call.turn is None or not call.agent_turn or call.api is None:
                continue
            for step in turn_steps(call.api, call.turn.message):
                if step.tool is not None:
                    found = results.get(step.call_id or "")
                    step.observation = found.text if found is not None else NO_RESULT
                    step.error = (
                        (found.text[:500] or "tool error") if found and found.error else None
                    )
                out.append(step)
        return out

    def infrastructure_fault(self) -> str | None:
        """Why the episode ended by the model server's or the gateway's failure, or None: its
        last admitted generation call failed and that was not the client's doing (a call
        that failed and was retried with success is no fault)."""
        admitted = [c for c in self.calls if c.api is not None and c.refused is None]
        last = admitted[-1] if admitted else None
        if last is not None and last.fault == "infrastructure":
            return last.error or f"the model call failed ({last.status})"
        return None

    @property
    def in_flight(self) -> int:
        """Admitted generation calls not yet recorded."""
        with self._lock:
            return self._in_flight

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
            "refused_connections": self.refused_connections,
            "infrastructure_fault": self.infrastructure_fault(),
        }

    def close(self) -> None:
        """No more requests are admitted (the episode is over)."""
        with self._lock:
            self.closed = True
