"""Pass/fail from a file the tests write: Harbor tasks and SWE-style repository tasks decide
their verdict in ``reward.json`` / ``reward.txt`` (the problem's ``reward_file``), not by exit
status alone. (The env's reward functions over a Verdict are :mod:`cudaenv.grading.rewards`.)"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import PurePosixPath

from cudaenv.errors import CudaEnvError
from cudaenv.grading.stages import TAIL_CHARS
from cudaenv.grading.verdict import StageResult
from cudaenv.sandbox.base import Sandbox


def reward_paths(reward_file: str) -> tuple[str, str]:
    """The JSON and the text reward file that ``reward_file`` names, in that order (JSON wins)."""
    path = PurePosixPath(reward_file)
    return str(path.with_suffix(".json")), str(path.with_suffix(".txt"))


def clear_rewards(sandbox: Sandbox, reward_file: str) -> None:
    """Remove stale reward files before the tests run: one the solution planted must not count."""
    sandbox.exec(
        "rm -rf -- " + " ".join(shlex.quote(p) for p in reward_paths(reward_file)), timeout=30
    )


def _reward_value(text: str, is_json: bool) -> float:
    """JSON: a number, or a flat {name: number} object whose ``reward`` (else its minimum) counts."""
    data = json.loads(text) if is_json else float(text)
    values = list(data.values()) if isinstance(data, dict) else [data]
    if not values or not all(isinstance(v, int | float) for v in values):
        raise ValueError("rewards must be numbers")
    value = float(data["reward"] if isinstance(data, dict) and "reward" in data else min(values))
    if not math.isfinite(value):
        raise ValueError("reward is not finite")
    return value


def read_reward(sandbox: Sandbox, reward_file: str) -> tuple[float | None, str]:
    """The reward the tests wrote (None if absent or malformed) and a line describing it."""
    for path in reward_paths(reward_file):
        try:
            text = sandbox.read_file(path).decode("utf-8", errors="replace").strip()
        except (OSError, CudaEnvError):
            continue
        try:
            return _reward_value(text, path.endswith(".json")), f"{path}: {text[:300]}"
        except (ValueError, TypeError) as exc:
            return None, f"malformed reward file {path}: {exc}"
    return None, f"no reward file written ({' or '.join(reward_paths(reward_file))})"


def reward_stage(sandbox: Sandbox, reward_file: str, stage: StageResult) -> StageResult:
    """A test stage that exited 0 passes only if its reward file says reward >= 1."""
    if stage.status != "ok":
        return stage
    reward, detail = read_reward(sandbox, reward_file)
    out = f"{stage.output_tail}\n[reward] {detail}"[-TAIL_CHARS:]
    if reward is None:
        return stage.model_copy(update={"status": "failed", "reason": detail, "output_tail": out})
    if reward < 1:
        return stage.model_copy(
            update={"status": "failed", "reason": f"reward {reward:g} < 1", "output_tail": out}
        )
    return stage.model_copy(update={"output_tail": out})
