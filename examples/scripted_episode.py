"""A scripted policy plays one full episode on a bundled problem, then an RL-style loop.

The policy reads the visible header, writes the problem's reference solution, builds it in
the sandbox, and submits; the env grades it in a fresh workspace and returns the reward.
Without a GPU, pick a cuda_python problem (its tests run on numba-cuda's simulator); with
one, any problem works.

    python examples/scripted_episode.py [--task py-vector-add] [--loop 3]
"""

from __future__ import annotations

import argparse

import cudaenv


def scripted_actions(problem: cudaenv.Problem) -> list[dict]:
    """Look around, write the reference, build, submit."""
    actions: list[dict] = [{"tool": "list_files", "args": {}}]
    actions += [
        {"tool": "read_file", "args": {"path": f.path, "start_line": 1, "end_line": 20}}
        for f in problem.context_files[:1]
    ]
    assert problem.solution is not None
    actions += [
        {"tool": "write_file", "args": {"path": f.path, "content": f.content}}
        for f in problem.solution.files
    ]
    if problem.build_command:
        actions.append({"tool": "bash", "args": {"command": problem.build_command, "timeout": 300}})
    actions.append({"tool": "submit", "args": {}})
    return actions


def play(task_id: str) -> float:
    env = cudaenv.make(task_id)
    obs, info = env.reset(seed=0)
    print(obs.splitlines()[0])
    reward = 0.0
    for action in scripted_actions(env.problem):
        obs, reward, terminated, truncated, info = env.step(action)
        print(f"  {action['tool']:<10} -> {obs.splitlines()[0] if obs else ''}")
        if terminated or truncated:
            verdict = info["verdict"]
            print(f"  reward {reward}  ({verdict.reason})")
            break
    env.close()
    return reward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="py-vector-add")
    parser.add_argument("--loop", type=int, default=3, help="problems in the RL-style loop")
    args = parser.parse_args()
    play(args.task)
    # an RL-style loop: episodes over several problems, rewards collected per problem
    suite = cudaenv.load_suite("builtin").filter(problem_type="cuda_python")
    rewards = {p.task_id: play(p.task_id) for p in list(suite)[: args.loop]}
    print("rewards:", rewards)


if __name__ == "__main__":
    main()
