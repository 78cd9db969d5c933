"""The examples run as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_scripted_episode_example_scores() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "examples/scripted_episode.py", "--loop", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reward 1.0  (passed)" in proc.stdout
    assert "rewards: {" in proc.stdout


def test_async_rollouts_example_against_scripted_server(cpu_problem_dir: Path) -> None:
    """examples/async_rollouts.py: concurrent ProcessEnv episodes, token ids in every turn."""
    import asyncio
    import importlib.util

    from cudaenv.problems import load_suite
    from tests.agents.scripted_server import ScriptedServer, tool_calls
    from tests.conftest import CPU_SOLUTION

    spec = importlib.util.spec_from_file_location(
        "async_rollouts_example", ROOT / "examples" / "async_rollouts.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    problem = load_suite(cpu_problem_dir.parent)["cpu-add"]
    solve = tool_calls(
        ("write_file", {"path": "solution.cpp", "content": CPU_SOLUTION}), ("submit", {})
    )
    with ScriptedServer([], default=solve) as srv:
        groups = asyncio.run(
            mod.rollout_groups([problem], group_size=4, model="scripted", base_url=srv.base_url)
        )
        sent = srv.requests
    assert list(groups) == ["cpu-add"] and [t.reward for t in groups["cpu-add"]] == [1.0] * 4
    for traj in groups["cpu-add"]:
        (turn,) = traj.turns
        assert turn.completion_token_ids and turn.prompt_token_ids and traj.agent == "openai"
    assert len(sent) == 4 and all(r.get("logprobs") for r in sent)
