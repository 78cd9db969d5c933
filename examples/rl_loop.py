"""A GRPO-style loop: groups of episodes per problem from a policy behind an OpenAI-compatible
endpoint, with group-relative advantages.

Each iteration draws ``group_size`` episodes per problem (``run_episodes`` with
``attempts=group_size``), keeps the (prompt, actions, reward) of each, drops infrastructure
failures (they say nothing about the policy), and computes the advantage of every sample
as (r - mean) / (std + eps) within its group. A trainer would turn these into a policy-gradient
step; here they are printed, which is where your update goes.

    python examples/rl_loop.py --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-Coder-7B \
        --ids reduce-sum,transpose --group-size 4 --iterations 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cudaenv.env.instructions import SYSTEM_PROMPT
from cudaenv.problems.model import Problem
from cudaenv.rollout import run_episodes


@dataclass
class Sample:
    """One episode as training data: what the policy saw first, what it did, what it got."""

    task_id: str
    prompt: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    reward: float


@dataclass
class Group:
    """The samples of one problem in one iteration."""

    task_id: str
    samples: list[Sample] = field(default_factory=list)

    def advantages(self, eps: float = 1e-6) -> list[float]:
        rewards = [s.reward for s in self.samples]
        if not rewards:
            return []
        mean = statistics.fmean(rewards)
        std = statistics.pstdev(rewards)
        return [(r - mean) / (std + eps) for r in rewards]


def collect_groups(
    problems: Sequence[Problem | str],
    *,
    group_size: int,
    model: str,
    base_url: str,
    workers: int = 4,
    max_turns: int = 30,
    use_ray: bool = False,
    env_options: dict[str, Any] | None = None,
    out_dir: str | None = None,
) -> list[Group]:
    """Run ``group_size`` episodes per problem and group them (infrastructure failures dropped)."""
    agent = {
        "name": "openai",
        "model": model,
        "base_url": base_url,
        "max_turns": max_turns,
        "temperature": 1.0,
    }
    groups: dict[str, Group] = defaultdict(lambda: Group(task_id=""))
    with tempfile.TemporaryDirectory() as tmp:  # fresh store per iteration: every sample is new
        for res in run_episodes(
            agent,
            problems,
            attempts=group_size,
            workers=workers,
            use_ray=use_ray,
            out_dir=out_dir or tmp,
            env_options=env_options or {},
        ):
            if res.status == "infrastructure" or res.trajectory is None:
                continue
            traj = res.trajectory
            sample = Sample(
                task_id=res.task_id,
                prompt=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": traj.instruction},
                ],
                actions=[
                    {"tool": s.tool, "args": s.args, "observation": s.observation}
                    for s in traj.steps
                ],
                reward=res.reward,
            )
            group = groups[res.task_id]
            group.task_id = res.task_id
            group.samples.append(sample)
    return [groups[k] for k in sorted(groups)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--source", default="builtin")
    parser.add_argument("--ids", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--ray", action="store_true")
    args = parser.parse_args(argv)

    from cudaenv.problems.loader import load_suite

    suite = load_suite(args.source)
    ids = [i for i in args.ids.split(",") if i]
    problems = list(suite.filter(include=ids) if ids else suite)
    for it in range(args.iterations):
        groups = collect_groups(
            problems,
            group_size=args.group_size,
            model=args.model,
            base_url=args.base_url,
            workers=args.workers,
            use_ray=args.ray,
            env_options={"source": args.source},
        )
        print(f"iteration {it}: {len(groups)} groups")
        for g in groups:
            adv = g.advantages()
            rewards = ", ".join(f"{s.reward:.2f}" for s in g.samples)
            print(
                f"  {g.task_id:30s} rewards [{rewards}]  advantages [{', '.join(f'{a:+.2f}' for a in adv)}]"
            )
        # a trainer would now weight each sample's action log-probs by its advantage and step


if __name__ == "__main__":
    main()
