"""Who is at fault when an episode goes wrong: one rule for every agent, the gateway and the runner.

Why one rule: a sample scored 0 because the model server was down trains a policy on noise
and lowers pass@k; a sample masked because the model wrote a NUL byte is re-run forever. So:

- **the agent's** (scored; ``status="agent_error"`` when it ends the episode): what the model
  produced (a bad tool argument is an error observation first), a request the model server
  refused as malformed (400, 413, 422: a conversation too long), the agent's own setup
  (:class:`~cudaenv.errors.AgentError`), and a CLI agent's misuse of the gateway (an unknown
  route, an oversized body: the gateway refuses those, the episode goes on).
- **infrastructure** (not scored, run again on resume, counted apart): the model server or
  the gateway failing (connection refused, timeouts, a non-JSON 200, and the statuses of
  :data:`SERVER_FAULT_STATUSES` once the client's retries are spent, a failure mid-episode:
  :class:`~cudaenv.errors.ModelServerError`), sandboxes, workers, grading machinery, and any
  exception cudaenv did not raise on purpose (a bug of ours: logged with its traceback).

>>> status_fault(503), status_fault(429), status_fault(400), status_fault(200)
('infrastructure', 'infrastructure', 'agent', None)
"""

from __future__ import annotations

from typing import Literal

from cudaenv.errors import AgentError, CudaEnvError, ModelServerError, ToolError

__all__ = [
    "RETRY_STATUSES",
    "SERVER_FAULT_STATUSES",
    "Fault",
    "fault_of",
    "is_unexpected",
    "retryable_status",
    "status_fault",
]

Fault = Literal["agent", "infrastructure"]

#: a model server's statuses worth another try (then infrastructure): overload and timeouts
RETRY_STATUSES = frozenset({408, 409, 429})
#: a model server's statuses that are never the model's doing: the above, and a key or model
#: name the server does not accept (our configuration), and every 5xx
SERVER_FAULT_STATUSES = RETRY_STATUSES | {401, 403, 404}


def retryable_status(status: int) -> bool:
    """Whether a client should try again after ``status`` (429, 408, 409, 5xx)."""
    return status in RETRY_STATUSES or status >= 500


def status_fault(status: int) -> Fault | None:
    """Whose fault a model server's HTTP status is (None: not a failure)."""
    if status < 400:
        return None
    return "infrastructure" if status in SERVER_FAULT_STATUSES or status >= 500 else "agent"


def fault_of(exc: BaseException) -> Fault:
    """Whose fault an exception that ended an episode is (module docstring)."""
    if isinstance(exc, ModelServerError):
        return "infrastructure"
    if isinstance(exc, AgentError | ToolError):
        return "agent"
    return "infrastructure"


def is_unexpected(exc: BaseException) -> bool:
    """An exception cudaenv did not raise on purpose: a bug, to be logged with its traceback."""
    return not isinstance(exc, CudaEnvError)
