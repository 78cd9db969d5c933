"""``BatchedEnvs``: N CudaEnvs as a gymnasium 1.x ``VectorEnv``, stepped in parallel threads.

A training loop batches model calls across N episodes: ``reset()`` gives N observations,
``step(actions)`` takes N actions (any form one :class:`CudaEnv` accepts: dicts, tool-call
lists, assistant text) and steps the N envs in threads (tool calls and grading are
subprocess-bound, so threads overlap them well). It follows gymnasium's vector conventions:

- ``reset(seed=, options=)`` returns ``(obs, infos)``; ``step`` returns ``(obs, rewards,
  terminations, truncations, infos)``. ``obs`` is a tuple of N strings (the batched Text
  space is a Tuple); rewards and flags are numpy arrays of shape ``(N,)``.
- ``infos`` is one dict: each key holds an array over the N envs and ``_key`` is the
  boolean mask of the envs that reported it (``VectorEnv._add_info``), e.g.
  ``infos["is_success"][infos["_is_success"]]``. The pydantic ``verdict`` and ``trajectory``
  are object arrays.
- ``metadata["autoreset_mode"]`` is the :class:`gymnasium.vector.AutoresetMode`:

  - ``NEXT_STEP`` (gymnasium's default): the step after an env finished resets it (its action
    is ignored, reward 0, flags False) and returns the new episode's first observation.
  - ``SAME_STEP``: an env that finishes is reset in that same step; its returned observation
    is the new episode's, and ``infos["final_obs"]`` / ``infos["final_info"]`` (masks
    ``_final_obs`` / ``_final_info``) carry the finished one's (verdict, trajectory, flat keys).
  - ``DISABLED``: a finished env stays finished until ``reset(options={"reset_mask": mask})``;
    pass ``None`` as its action (it then returns its last observation, reward 0, flags False
    and no info). ``done`` tells which envs finished. This suits LLM loops whose episodes end
    at different turns and that do not want a fresh sandbox opened behind their back.

``reset`` options other than ``reset_mask`` (``task_id``, ``mode``) go to every reset env.
Problems are assigned round-robin; ``messages(i)`` is env ``i``'s conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cudaenv.env.core import CudaEnv
from cudaenv.env.modes import reset_options
from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.problems.model import Problem

Step = tuple[str, float, bool, bool, dict[str, Any]]


def _mode(value: AutoresetMode | str) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        return value
    names = {m.name.lower(): m for m in AutoresetMode} | {m.value.lower(): m for m in AutoresetMode}
    key = str(value).lower().replace("-", "_")
    if key not in names:
        raise SpecError(
            f"unknown autoreset_mode {value!r}; choose next_step, same_step or disabled",
            field="autoreset_mode",
        )
    return names[key]


class BatchedEnvs(VectorEnv):
    """N CudaEnvs stepped in lock-step; see the module docstring for the conventions.

    Args:
        problems: Problems or task ids, assigned to the N envs round-robin.
        n: how many envs.
        env_options: :class:`CudaEnv` options for every env.
        autoreset_mode: an ``AutoresetMode`` or its name ("next_step", "same_step", "disabled").
        threads: threads stepping the envs (default: n).
    """

    def __init__(
        self,
        problems: Sequence[Problem | str],
        n: int,
        *,
        env_options: Mapping[str, Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        threads: int | None = None,
    ) -> None:
        if n < 1 or not problems:
            raise SpecError("BatchedEnvs needs n >= 1 and at least one problem", field="n")
        self.autoreset_mode = _mode(autoreset_mode)
        opts = dict(env_options or {})
        self.envs = [CudaEnv(problems[i % len(problems)], **opts) for i in range(n)]
        self.num_envs = n
        self.metadata = {**CudaEnv.metadata, "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._threads = threads or n
        self._pool: ThreadPoolExecutor | None = None
        self.done = np.zeros(n, dtype=bool)  # finished (and not reset since)
        self._obs: list[str] = [""] * n

    @property
    def n(self) -> int:
        return self.num_envs

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.envs[0].tools

    def messages(self, i: int) -> list[dict[str, Any]]:
        """Env ``i``'s episode so far as chat messages (the policy's prompt)."""
        return self.envs[i].messages

    def _map(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="cudaenv-batched")
        return list(self._pool.map(fn, range(self.num_envs), items))

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset every env (or those of ``options["reset_mask"]``); env ``i`` gets ``seed + i``."""
        opts = reset_options(options)
        mask = opts.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=bool)
        elif not (
            isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_
            and mask.shape == (self.num_envs,)
        ):
            raise SpecError(
                f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)",
                field="reset_mask",
            )
        if seed is None or isinstance(seed, int):
            seeds: list[int | None] = [
                None if seed is None else seed + i for i in range(self.num_envs)
            ]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise SpecError(f"expected {self.num_envs} seeds, got {len(seeds)}", field="seed")

        def one(i: int, s: int | None) -> dict[str, Any] | None:
            if not mask[i]:
                return None
            self._obs[i], info = self.envs[i].reset(seed=s, options=opts or None)
            self.done[i] = False
            return info

        infos: dict[str, Any] = {}
        for i, info in enumerate(self._map(one, seeds)):
            if info is not None:
                infos = self._add_info(infos, info, i)
        return tuple(self._obs), infos

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with its action; see the module docstring for finished envs."""
        if len(actions) != self.num_envs:
            raise SpecError(
                f"expected {self.num_envs} actions, got {len(actions)}", field="actions"
            )
        mode = self.autoreset_mode
        for i, action in enumerate(actions):
            if mode is AutoresetMode.DISABLED and self.done[i] and action is not None:
                raise CudaEnvError(
                    f"env {i} has finished: pass None as its action, or reset it with "
                    "options={'reset_mask': mask}"
                )

        def one(i: int, action: Any) -> tuple[Step, dict[str, Any] | None]:
            env = self.envs[i]
            if self.done[i]:
                if mode is AutoresetMode.NEXT_STEP:
                    self._obs[i], info = env.reset()
                    self.done[i] = False
                    return (self._obs[i], 0.0, False, False, info), None
                return (self._obs[i], 0.0, False, False, {}), None
            obs, reward, term, trunc, info = env.step(action)
            final = None
            if term or trunc:
                if mode is AutoresetMode.SAME_STEP:
                    final = {"final_obs": obs, "final_info": info}
                    obs, info = env.reset()
                else:
                    self.done[i] = True
            self._obs[i] = obs
            return (obs, reward, term, trunc, info), final

        results = self._map(one, actions)
        infos: dict[str, Any] = {}
        for i, ((_, _, _, _, info), final) in enumerate(results):
            if final is not None:
                infos = self._add_info(infos, final, i)
            infos = self._add_info(infos, info, i)
        rewards = np.array([r[0][1] for r in results], dtype=np.float64)
        terminated = np.array([r[0][2] for r in results], dtype=np.bool_)
        truncated = np.array([r[0][3] for r in results], dtype=np.bool_)
        return tuple(self._obs), rewards, terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> BatchedEnvs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
