"""The nop agent: submits the untouched workspace at once (the negative control: scores 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudaenv.agents.base import finish_trajectory

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory


class NopAgent:
    """Resets and submits; a problem this passes has tests that check nothing."""

    name = "nop"

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        env.reset(seed=seed)
        env.step({"tool": "submit", "args": {}})
        return finish_trajectory(env, self.name)
