"""The flat, JSON-safe keys of a terminal ``info`` (what trainers log, mask and aggregate).

Every key is a plain bool, str, float or None, so ``json.dumps`` of these keys always works
and gymnasium's vector envs batch them into typed arrays. The pydantic ``verdict`` and
``trajectory`` objects ride beside them in the same ``info``.
"""

from __future__ import annotations

import math
from typing import Any

from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Mode

#: the keys :func:`terminal_info` returns, documented in ``CudaEnv``'s docstring and the README
TERMINAL_KEYS = (
    "is_success",
    "reward_valid",
    "failure",
    "reason",
    "task_id",
    "mode",
    "speedup",
    "truncation_reason",
)


def terminal_info(
    task_id: str, mode: Mode, verdict: Verdict | None, truncation_reason: str | None
) -> dict[str, Any]:
    """The flat keys for an episode that just ended (graded or not).

    ``reward_valid`` is False only for an infrastructure verdict: the reward says nothing
    about the policy and a trainer must mask the sample, not count it as a 0.
    """
    speedup = verdict.speedup if verdict is not None else None
    if speedup is not None and not math.isfinite(speedup):
        speedup = None
    return {
        "is_success": bool(verdict is not None and verdict.passed is True),
        "reward_valid": not (verdict is not None and verdict.failure == "infrastructure"),
        "failure": verdict.failure if verdict is not None else None,
        "reason": verdict.reason if verdict is not None else None,
        "task_id": task_id,
        "mode": mode,
        "speedup": float(speedup) if speedup is not None else None,
        "truncation_reason": truncation_reason,
    }
