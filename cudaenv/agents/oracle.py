"""The oracle: writes the problem's reference solution, then submits (for a question,
answers with its expected answer).

It must score 1 on every valid problem (the release gate's positive control); a problem
whose reference does not pass is a broken problem, not a weak agent.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cudaenv.agents.base import finish_trajectory
from cudaenv.errors import AgentError

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory


class OracleAgent:
    """Writes every reference file with ``write_file`` (a patch reference is applied with
    ``git apply``, else ``patch -p1``, through ``bash``), then calls ``submit``."""

    name = "oracle"

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        env.reset(seed=seed)
        question = getattr(env, "question", None)  # a QuestionEnv: give its expected answer
        if question is not None:
            env.step({"tool": "answer", "args": {"answer": json.dumps(question.expected)}})
            return finish_trajectory(env, self.name)
        ref = env.problem.solution
        if ref is None:
            raise AgentError(
                f"problem {env.problem.task_id!r} has no reference solution for the oracle"
            )
        done = False
        for f in ref.files:
            _, _, term, trunc, _ = env.step(
                {"tool": "write_file", "args": {"path": f.path, "content": f.content}}
            )
            if term or trunc:
                done = True
                break
        if not done and ref.type == "patch" and ref.patch:
            env.step(
                {"tool": "write_file", "args": {"path": ".oracle.patch", "content": ref.patch}}
            )
            _, _, term, trunc, _ = env.step(
                {
                    "tool": "bash",
                    "args": {
                        "command": "(git apply --whitespace=nowarn .oracle.patch || "
                        "patch -p1 < .oracle.patch) && rm -f .oracle.patch"
                    },
                }
            )
            done = term or trunc
        if not done:
            env.step({"tool": "submit", "args": {}})
        return finish_trajectory(env, self.name)
