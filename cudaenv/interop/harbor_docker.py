"""Run exported tasks under real Harbor, locally, on a host without a container registry.

Harbor 0.25's docker environment enforces ``network_mode = "no-network"`` (which every
exported cudaenv task asks for) with an egress-control sidecar: it probes the kernel with an
``alpine`` image and builds the sidecar ``FROM gogost/gost``, both pulled from Docker Hub.
Offline the probe fails, egress control is off, and Harbor rejects the task
("network_mode='no-network' is not supported by EnvironmentType.DOCKER environment").

``OfflineDockerEnvironment`` is the same environment with the static form of that policy:
a no-network trial's ``main`` service runs with ``network_mode: none`` (Harbor's own
``docker-compose-no-network.yaml`` overlay, the one its remote Compose providers use), so
nothing has to be pulled. It cannot switch policies between phases or allowlist hosts, and
says so. Harbor loads it by import path (``--env``), with cudaenv importable by Harbor's
Python; :func:`harbor_run_command` writes the whole command line::

    HARBOR_TELEMETRY=0 LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONPATH=/path/to/cudaenv \\
    harbor run -p TASK_DIR -a oracle -e cudaenv.interop.harbor_docker:OfflineDockerEnvironment \\
        --override-gpus 0 --override-cpus 2 --override-memory-mb 4096 -o JOBS -n 1 -y -q

The two variables keep Harbor's own traffic off the network (its telemetry, LiteLLM's
model price list). Harbor needs Python >= 3.12 and Docker Compose v2 (on Debian bookworm:
``.ci/compose-setup.sh``). cudaenv's own Python may lack Harbor, so the class exists only
where Harbor imports; this module imports quietly without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

IMPORT_PATH = "cudaenv.interop.harbor_docker:OfflineDockerEnvironment"
# Harbor's own network use, switched off: PostHog telemetry, LiteLLM's remote price list
OFFLINE_ENV: dict[str, str] = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
# the directory cudaenv imports from (this checkout, or site-packages)
IMPORT_ROOT = Path(__file__).resolve().parents[2]


def harbor_run_command(
    harbor: str | Path,
    task_dir: str | Path,
    jobs_dir: str | Path,
    job_name: str,
    *,
    agent: str = "oracle",
    cpus: int | None = None,
    memory_mb: int | None = None,
    gpus: int | None = 0,
    offline: bool = True,
) -> list[str]:
    """``harbor run`` of one task with one agent, its results in ``jobs_dir/job_name``.

    ``cpus``/``memory_mb``/``gpus`` override the task's (exported tasks ask for 4 CPUs,
    16 GB and a GPU; Docker refuses more CPUs than the host has). ``offline``: Harbor's
    environment is :class:`OfflineDockerEnvironment` rather than its plain ``docker``.
    """
    cmd = [str(harbor), "run", "-p", str(task_dir), "-a", agent]
    cmd += ["-e", IMPORT_PATH if offline else "docker"]
    cmd += ["-o", str(jobs_dir), "--job-name", job_name, "-n", "1", "-y", "-q"]
    for flag, value in (
        ("--override-cpus", cpus),
        ("--override-memory-mb", memory_mb),
        ("--override-gpus", gpus),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    return cmd


def harbor_env(base: Mapping[str, str] | None = None, *, offline: bool = True) -> dict[str, str]:
    """The environment for ``harbor run``: this cudaenv importable, and with
    ``offline`` Harbor's own network traffic off."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(IMPORT_ROOT), env.get("PYTHONPATH")) if p)
    if offline:
        env.update(OFFLINE_ENV)
    return env


def trial_results(job_dir: str | Path) -> list[dict[str, Any]]:
    """The ``result.json`` of every trial of a finished Harbor job (one per task and attempt)."""
    return [json.loads(p.read_text()) for p in sorted(Path(job_dir).glob("*/result.json"))]


try:
    from harbor.environments.capabilities import EnvironmentCapabilities
    from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
    from harbor.environments.docker.docker import DockerEnvironment
    from harbor.models.task.config import NetworkMode
except ImportError:  # no Harbor here (it needs Python >= 3.12)
    DockerEnvironment = None  # type: ignore[assignment,misc]

if DockerEnvironment is not None:

    class OfflineDockerEnvironment(DockerEnvironment):  # type: ignore[misc,valid-type]
        """Harbor's docker environment; no-network by ``network_mode: none``, nothing pulled."""

        @classmethod
        def _egress_control_kernel_support(cls) -> bool:
            return False  # the probe runs an image from Docker Hub; egress control stays off

        @property
        def capabilities(self) -> EnvironmentCapabilities:
            caps = super().capabilities
            return caps.model_copy(update={"disable_internet": True})

        @property
        def _docker_compose_paths(self) -> list[Path]:
            paths = list(super()._docker_compose_paths)
            if self.network_policy.network_mode == NetworkMode.NO_NETWORK:
                paths.append(COMPOSE_NO_NETWORK_PATH)  # last: it overrides main's network
            return paths


__all__ = ["IMPORT_PATH", "OFFLINE_ENV", "harbor_env", "harbor_run_command", "trial_results"]
if DockerEnvironment is not None:
    __all__ += ["OfflineDockerEnvironment"]
