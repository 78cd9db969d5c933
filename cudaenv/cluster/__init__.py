"""Past one machine: episodes on CPU actors anywhere in a Ray cluster, their exclusive grading
stages (tests, sanitizer, benchmark) on one grader actor per GPU (and CPU graders for
benchmarked problems that need no GPU), a cluster-wide baseline cache, retries of work whose
actor died, and results stored once, by the driver. See ``docs/CLUSTER.md``.

Ray is imported only when a session starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "ClusterConfig": "cudaenv.cluster.config",
    "ClusterRun": "cudaenv.cluster.session",
    "ClusterSession": "cudaenv.cluster.session",
    "ClusterStatus": "cudaenv.cluster.status",
    "GradingService": "cudaenv.cluster.service",
    "run_cluster_episodes": "cudaenv.cluster.session",
}

__all__ = [
    "ClusterConfig",
    "ClusterRun",
    "ClusterSession",
    "ClusterStatus",
    "GradingService",
    "run_cluster_episodes",
]

if TYPE_CHECKING:
    from cudaenv.cluster.config import ClusterConfig
    from cudaenv.cluster.service import GradingService
    from cudaenv.cluster.session import ClusterRun, ClusterSession, run_cluster_episodes
    from cudaenv.cluster.status import ClusterStatus


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cudaenv.cluster' has no attribute {name!r}")
