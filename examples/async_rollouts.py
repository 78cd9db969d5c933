"""Token-level rollouts for an async trainer: groups of concurrent episodes in one event loop.

Each episode is a ``ProcessEnv`` (the env in a worker process, so the event loop never
waits for the episodes' Python) played by a training-mode OpenAI-compatible client: the
requests are prefix-stable and each trajectory's ``turns`` hold the prompt and completion
token ids and the completion logprobs the server returned (vLLM and SGLang return them).
Infrastructure faults (a dead worker, a grading host down) are dropped from their group,
never scored 0. What a trainer does with the groups goes where they are printed.

    python examples/async_rollouts.py --base-url http://localhost:8000/v1 \\
        --model Qwen/Qwen2.5-Coder-7B --ids reduce-sum,transpose --group-size 8
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from cudaenv import ProcessEnv
from cudaenv.agents import make_agent
from cudaenv.env.trajectory import Trajectory
from cudaenv.errors import ModelServerError, WorkerError
from cudaenv.problems.model import Problem


async def rollout_groups(
    problems: Sequence[Problem | str],
    *,
    group_size: int,
    model: str,
    base_url: str,
    max_turns: int = 30,
    env_options: dict[str, Any] | None = None,
) -> dict[str, list[Trajectory]]:
    """``group_size`` concurrent episodes per problem; the valid trajectories by task id."""
    agent = make_agent(
        "openai",
        model=model,
        base_url=base_url,
        training=True,
        max_turns=max_turns,
        temperature=1.0,  # training mode asks for token ids and logprobs itself
    )

    async def one(problem: Problem | str) -> Trajectory | None:
        env = ProcessEnv(problem, **(env_options or {}))
        try:
            return await agent.arun(env)  # type: ignore[arg-type]
        except (WorkerError, ModelServerError):
            return None  # the machinery or the model server failed, not the policy: no sample
        finally:
            await env.aclose()

    try:
        trajs = await asyncio.gather(*(one(p) for p in problems for _ in range(group_size)))
    finally:
        await agent.aclose()
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in trajs:
        if traj is None or (traj.verdict is not None and traj.verdict.failure == "infrastructure"):
            continue
        groups[traj.task_id].append(traj)
    return dict(groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--ids", required=True, help="comma-separated task ids (builtin)")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=30)
    args = parser.parse_args()
    groups = asyncio.run(
        rollout_groups(
            args.ids.split(","),
            group_size=args.group_size,
            model=args.model,
            base_url=args.base_url,
            max_turns=args.max_turns,
        )
    )
    for task_id, trajs in sorted(groups.items()):
        tokens = sum(len(t.completion_token_ids or []) for traj in trajs for t in traj.turns)
        rewards = [round(traj.reward, 3) for traj in trajs]
        print(f"{task_id}: rewards {rewards}, {tokens} completion tokens with ids")


if __name__ == "__main__":
    main()
