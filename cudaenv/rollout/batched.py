"""``BatchedEnvs``: N environments stepped together, for loops that drive the policy themselves.

A training loop batches model calls across N episodes: ``reset()`` gives N observations,
``step(actions)`` takes N actions and steps the N envs in parallel threads (tool calls and
grading are subprocess-bound, so threads overlap them well).

Finished envs. With ``auto_reset=False`` (the default) an env that has finished stays
finished: its action is ignored (pass None), it returns its last observation, reward 0,
its final terminated/truncated flags and ``info["finished"] = True``; ``done`` tells which.
With ``auto_reset=True`` an env that finishes in a step is reset in that same step
(gymnasium's "same-step" mode): the returned observation is the new episode's first one,
and ``info["final_observation"]`` / ``info["final_info"]`` carry the finished episode's
(the verdict and trajectory are in ``final_info``). Problems are assigned round-robin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from cudaenv.env.core import CudaEnv
from cudaenv.problems.model import Problem


class BatchedEnvs:
    """N CudaEnvs stepped in lock-step; see the module docstring for finished envs."""

    def __init__(
        self,
        problems: Sequence[Problem | str],
        n: int,
        *,
        env_options: Mapping[str, Any] | None = None,
        auto_reset: bool = False,
        threads: int | None = None,
    ) -> None:
        if n < 1 or not problems:
            raise ValueError("BatchedEnvs needs n >= 1 and at least one problem")
        opts = dict(env_options or {})
        self.envs = [CudaEnv(problems[i % len(problems)], **opts) for i in range(n)]
        self.n = n
        self.auto_reset = auto_reset
        self._threads = threads or n
        self._pool: ThreadPoolExecutor | None = None
        self.done = np.zeros(n, dtype=bool)
        self._last: list[tuple[str, bool, bool]] = [("", False, False)] * n
        self._episodes = [0] * n

    def _map(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="cudaenv-batched")
        return list(self._pool.map(fn, range(self.n), items))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.envs[0].tools

    def messages(self, i: int) -> list[dict[str, Any]]:
        """Env ``i``'s episode so far as chat messages (the policy's prompt)."""
        return self.envs[i].messages

    def reset(self, *, seed: int | None = None) -> list[str]:
        """Reset every env; env ``i`` gets ``seed + i`` when a seed is given."""

        def one(i: int, _: Any) -> str:
            obs, _info = self.envs[i].reset(seed=None if seed is None else seed + i)
            self._last[i] = (obs, False, False)
            return obs

        out = self._map(one, [None] * self.n)
        self.done[:] = False
        return out

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every unfinished env with its action; see the module docstring."""
        if len(actions) != self.n:
            raise ValueError(f"expected {self.n} actions, got {len(actions)}")

        def one(i: int, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
            if self.done[i]:
                obs, term, trunc = self._last[i]
                return obs, 0.0, term, trunc, {"finished": True}
            obs, reward, term, trunc, info = self.envs[i].step(action)
            if (term or trunc) and self.auto_reset:
                self._episodes[i] += 1
                new_obs, _ = self.envs[i].reset()
                info = {"final_observation": obs, "final_info": info, "episode": self._episodes[i]}
                obs = new_obs
            elif term or trunc:
                self.done[i] = True
            self._last[i] = (obs, term, trunc)
            return obs, reward, term, trunc, info

        results = self._map(one, actions)
        obs = [r[0] for r in results]
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=bool)
        truncated = np.array([r[3] for r in results], dtype=bool)
        return obs, rewards, terminated, truncated, [r[4] for r in results]

    def close(self) -> None:
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> BatchedEnvs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
