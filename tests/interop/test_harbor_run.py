"""An exported task run end to end by real Harbor (``harbor run``, its docker environment).

Harbor builds the task's image FROM the local ``cudaenv-eval-cpu`` image, starts it with
Docker Compose v2, runs its oracle agent (``solution/solve.sh``) or its nop agent, uploads
``tests/`` and runs ``tests/test.sh``, which grades the workspace with cudaenv inside the
container (numba-cuda's simulator; no GPU) and writes ``/logs/verifier/reward.json``. The
release gate: oracle 1, nop 0. Offline, through
:class:`cudaenv.interop.harbor_docker.OfflineDockerEnvironment`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.interop import harbor_docker
from cudaenv.interop.harbor_docker import harbor_env, harbor_run_command, trial_results
from cudaenv.interop.harbor_export import export_problem
from cudaenv.interop.harbor_verify import sandbox_env
from cudaenv.problems import load_suite

EVAL_IMAGE = os.environ.get("CUDAENV_EVAL_CPU_IMAGE", "cudaenv-eval-cpu:latest")
PROBLEM = "py-vector-add"


def _docker_unready() -> str | None:
    """Why Harbor's docker environment cannot run here, or None."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    compose = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if compose.returncode != 0:
        return (
            "Docker Compose v2 is missing (`docker compose version` failed; Harbor's docker "
            "environment needs it); on Debian bookworm run `bash .ci/compose-setup.sh`"
        )
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    if info.returncode != 0:
        return f"the Docker engine is unreachable: {info.stderr.strip()[-300:]}"
    image = subprocess.run(["docker", "image", "inspect", EVAL_IMAGE], capture_output=True)
    if image.returncode != 0:
        return f"image {EVAL_IMAGE} missing; build it with docker/build-images.sh"
    return None


@pytest.fixture(scope="session")
def compose() -> None:
    """Skips unless Docker, Compose v2 and the eval image are here (checked before the
    harbor venv, which may take minutes to install)."""
    why = _docker_unready()
    if why is not None:
        pytest.skip(why)


@pytest.mark.docker
@pytest.mark.parametrize(("agent", "expected"), [("oracle", 1.0), ("nop", 0.0)])
def test_harbor_runs_the_exported_task(
    compose: None, harbor_python: str, tmp_path: Path, agent: str, expected: float
) -> None:
    task = export_problem(load_suite("builtin")[PROBLEM], tmp_path / "tasks", image=EVAL_IMAGE)
    harbor = Path(harbor_python).parent / "harbor"
    cmd = harbor_run_command(
        harbor, task, tmp_path / "jobs", agent, agent=agent, cpus=min(2, os.cpu_count() or 1)
    )
    cmd += ["--override-memory-mb", "4096"]
    res = subprocess.run(
        cmd, env=harbor_env(), cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [trial] = trial_results(tmp_path / "jobs" / agent)
    assert trial["exception_info"] is None, trial["exception_info"]
    assert trial["verifier_result"]["rewards"]["reward"] == expected, trial["verifier_result"]
    # the reward is the one our tests/test.sh wrote (with cudaenv's verdict beside it)
    logs = Path(trial["trial_uri"].removeprefix("file://")) / "verifier"
    assert (logs / "reward.json").is_file() and (logs / "verdict.json").is_file()


# leftover-sees-verifier: the "oracle" writes a wrong solution and leaves a loop that keeps
# writing a perfect reward where the verifier writes its own, to outlive the agent phase
LEFTOVER_SOLVE = """#!/usr/bin/env bash
cd "${CUDAENV_WORKDIR:-/workspace}"
printf 'def vector_add(a, b, out):\\n    pass\\n' > solution.py
nohup bash -c 'while :; do mkdir -p /logs/verifier; echo "{\\"reward\\": 1.0}" > /logs/verifier/reward.json; sleep 0.05; done' >/dev/null 2>&1 &
"""


@pytest.mark.docker
def test_a_process_the_agent_left_never_sees_the_verifier(
    compose: None, harbor_python: str, tmp_path: Path
) -> None:
    """Harbor's separate verifier environment: a fresh container grades the workspace alone;
    the agent's container (and the loop it left) is gone, so the wrong solution scores 0."""
    task = export_problem(load_suite("builtin")[PROBLEM], tmp_path / "tasks", image=EVAL_IMAGE)
    (task / "solution" / "solve.sh").write_text(LEFTOVER_SOLVE)
    harbor = Path(harbor_python).parent / "harbor"
    cmd = harbor_run_command(
        harbor,
        task,
        tmp_path / "jobs",
        "leftover",
        agent="oracle",
        cpus=min(2, os.cpu_count() or 1),
    )
    cmd += ["--override-memory-mb", "4096"]
    res = subprocess.run(
        cmd, env=harbor_env(), cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [trial] = trial_results(tmp_path / "jobs" / "leftover")
    assert trial["exception_info"] is None, trial["exception_info"]
    assert trial["verifier_result"]["rewards"]["reward"] == 0.0, trial["verifier_result"]
    logs = Path(trial["trial_uri"].removeprefix("file://")) / "verifier"
    verdict = json.loads((logs / "verdict.json").read_text())
    assert verdict["passed"] is False and verdict["compiled"] is not None


def test_harbor_run_command() -> None:
    cmd = harbor_run_command("harbor", "t", "jobs", "j", agent="nop", cpus=2)
    assert cmd[:6] == ["harbor", "run", "-p", "t", "-a", "nop"]
    assert cmd[cmd.index("-e") + 1] == harbor_docker.IMPORT_PATH
    assert cmd[cmd.index("--override-cpus") + 1] == "2"
    assert cmd[cmd.index("--override-gpus") + 1] == "0"
    assert "--override-memory-mb" not in cmd
    online = harbor_run_command("harbor", "t", "jobs", "j", gpus=None, offline=False)
    assert online[online.index("-e") + 1] == "docker" and "--override-gpus" not in online
    env = harbor_env({"PATH": "/bin"})
    assert env["HARBOR_TELEMETRY"] == "0" and env["PYTHONPATH"] == str(harbor_docker.IMPORT_ROOT)


def test_offline_environment_needs_harbor() -> None:
    """cudaenv's own Python (no Harbor) imports the module; the class exists only with Harbor."""
    has_harbor = harbor_docker.DockerEnvironment is not None
    assert hasattr(harbor_docker, "OfflineDockerEnvironment") == has_harbor
    assert ("OfflineDockerEnvironment" in harbor_docker.__all__) == has_harbor


def test_verifier_sandbox_finds_the_venv_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a venv (the eval images' /opt/cudaenv-venv) grading commands must find its python,
    not the base interpreter's directory, which has no `python` and no numba."""
    monkeypatch.setattr(sys, "prefix", "/opt/some-venv")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    env = sandbox_env()
    assert env["PATH"].split(":")[0] == "/opt/some-venv/bin"
    assert env["VIRTUAL_ENV"] == "/opt/some-venv" and "/usr/bin" in env["PATH"].split(":")
    monkeypatch.setattr(sys, "prefix", "/usr")
    assert sandbox_env() == {}
