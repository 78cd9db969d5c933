"""Rollouts: many episodes in threads or on Ray, a batched API, the resumable results store.

Ray is imported only when ``use_ray=True`` is asked for.
"""

from __future__ import annotations

from cudaenv.rollout.batched import BatchedEnvs
from cudaenv.rollout.episode import EpisodeResult
from cudaenv.rollout.runner import arun_episodes, latest_results, run_episodes
from cudaenv.rollout.store import ResultStore

__all__ = [
    "BatchedEnvs",
    "EpisodeResult",
    "ResultStore",
    "arun_episodes",
    "latest_results",
    "run_episodes",
]
