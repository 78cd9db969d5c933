"""Cluster settings fail before Ray starts, naming the field; grader counts follow the
cluster's resources (no Ray: the resources are given)."""

from __future__ import annotations

import pytest

from cudaenv.cluster.config import ClusterConfig, cluster_config
from cudaenv.cluster.service import grader_specs
from cudaenv.errors import SpecError


def test_bad_settings_name_their_field() -> None:
    with pytest.raises(SpecError) as exc:
        cluster_config(episode_workers=0)
    assert exc.value.field == "episode_workers"
    with pytest.raises(SpecError) as exc:
        cluster_config(priority="urgent")
    assert exc.value.field == "priority"
    with pytest.raises(SpecError) as exc:
        cluster_config(workers=3)  # not a setting
    assert exc.value.field == "workers"


def test_overrides_apply_over_a_config_and_the_window_defaults_to_twice_capacity() -> None:
    cfg = cluster_config(ClusterConfig(episode_workers=4), episodes_per_worker=3)
    assert cfg.episode_workers == 4 and cfg.capacity == 12 and cfg.submit_window == 24
    assert cluster_config(cfg, window=5).submit_window == 5


def test_one_grader_per_gpu_and_per_grader_resource_unit() -> None:
    specs = grader_specs(ClusterConfig(), {"CPU": 64, "GPU": 3, "cudaenv_grader": 2})
    assert [(s.name, s.kind) for s in specs] == [
        ("gpu-0", "gpu"),
        ("gpu-1", "gpu"),
        ("gpu-2", "gpu"),
        ("cpu-0", "cpu"),
        ("cpu-1", "cpu"),
    ]
    assert specs[0].options == {"num_gpus": 1, "num_cpus": 1.0}
    assert specs[3].options == {"resources": {"cudaenv_grader": 1}, "num_cpus": 1.0}
    fixed = grader_specs(ClusterConfig(gpu_graders=1, cpu_graders=0), {"GPU": 8})
    assert [s.name for s in fixed] == ["gpu-0"]
