"""A simulated cluster on this host (``ray.cluster_utils.Cluster``: one raylet per node) and
the problems its tests run.

Nodes: the head (the driver, the scheduler and the baseline store; no CPUs to schedule on),
two CPU nodes that also advertise one ``cudaenv_grader`` each (a CPU grader apiece) and a
node advertising one GPU (a GPU grader; there is no real GPU behind it here, so GPU stages
are skipped there honestly). Each node has its own cache dir, as separate machines would:
a build reaches a grader only by being shipped. Ray's session files go to a private temp dir
so that no other Ray user on this host connects to this cluster (or this test to theirs).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem

BUILD = "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp"
BASELINE = CPU_SOLUTION.replace("a + b", "b + a")


@dataclass
class SimCluster:
    cluster: Any
    nodes: dict[str, Any]
    caches: dict[str, Path]

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def node_name(self, node_id: str) -> str:
        return next(n for n, node in self.nodes.items() if node.node_id == node_id)


@pytest.fixture(scope="module")
def sim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    root = tmp_path_factory.mktemp("nodes")
    # the system temp dir, not $TMPDIR: Ray's socket paths must stay short
    ray_tmp = tempfile.mkdtemp(prefix="cudaenv-ray-", dir="/tmp")
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = ray_tmp
    caches = {n: root / f"cache-{n}" for n in ("head", "a", "b", "g")}

    def env(name: str) -> dict[str, str]:
        return {"CUDAENV_CACHE_DIR": str(caches[name])}

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "env_vars": env("head")},
    )
    try:
        nodes = {
            "a": cluster.add_node(num_cpus=2, resources={"cudaenv_grader": 1}, env_vars=env("a")),
            "b": cluster.add_node(num_cpus=2, resources={"cudaenv_grader": 1}, env_vars=env("b")),
            "g": cluster.add_node(num_cpus=1, num_gpus=1, env_vars=env("g")),
        }
        cluster.wait_for_nodes()
        yield SimCluster(cluster, nodes, caches)
    finally:
        ray.shutdown()
        cluster.shutdown()
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(ray_tmp, ignore_errors=True)


def cpu_problem(
    root: Path, task_id: str, *, gpu: bool = False, bench: str | None = None
) -> Problem:
    """A g++ problem: benchmarked when ``bench`` is a command; ``gpu`` marks it as needing a
    GPU (its tests then run only on a GPU grader)."""
    spec: dict[str, Any] = {"build_command": BUILD, "metadata": {"requires_gpu": gpu}}
    if bench:
        spec["benchmark_command"] = bench
    write_problem(
        root,
        task_id,
        spec=spec,
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": f"// {task_id}\n{CPU_TEST}",
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": BASELINE,
        },
    )
    return load_suite(root)[task_id]
