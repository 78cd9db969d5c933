"""A SIGKILLed Ray driver leaves nothing running: its local Ray (GCS, raylet, agents), the
actor running an episode, and that episode's sandbox (processes and dir) all go (real Ray,
real driver process, real signal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("ray")

from cudaenv.rollout._janitor import _descendants, _is_ray
from cudaenv.sandbox._owners import Owner, proc_start
from tests.conftest import need_image

HANG_GUARD_S = 90.0  # only against a hang: the wait ends as soon as everything is gone

# The driver: one Ray episode whose agent starts a background process in its sandbox, writes
# what it made to a file, then blocks, so the driver is SIGKILLed mid-episode.
_DRIVER = """
import json, os, sys, time
from pathlib import Path
from cudaenv.problems import load_suite
from cudaenv.rollout.ray_pool import init_ray
from cudaenv.rollout.runner import run_episodes

class BlockingAgent:
    name = "blocking"

    def __init__(self, tag, report):
        self.tag, self.report = tag, report

    def run(self, env, *, seed=None):
        env.reset(seed=seed)
        cmd = f"(exec -a {self.tag} sleep 1000) >/dev/null 2>&1 & echo started"
        env.step({"tool": "bash", "args": {"command": cmd}})
        box = env.sandbox
        made = {"worker": os.getpid(), "container": getattr(box, "container_name", None)}
        if hasattr(box, "workspace"):
            made["root"] = str(box.workspace.parent)
        Path(self.report).write_text(json.dumps(made))
        time.sleep(1000)

suite, tag, report, options = sys.argv[1:5]
init_ray(num_cpus=1)
agent = lambda: BlockingAgent(tag, report)
problems = [load_suite(suite)["cpu-add"]]
list(run_episodes(agent, problems, use_ray=True, env_options=json.loads(options)))
"""


def _tagged(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            argv0 = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if argv0 == tag.encode() and Owner(int(entry)).alive():
            found.append(int(entry))
    return found


def _poll(condition, what: str):  # type: ignore[no-untyped-def]
    end = time.monotonic() + HANG_GUARD_S
    while not (value := condition()) and time.monotonic() < end:
        time.sleep(0.2)
    assert value, what
    return value


TEST_IMAGE = os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest")
SANDBOXES = {
    "bubblewrap": {"sandbox_options": {"isolation": "bubblewrap"}},
    "rlimits": {"sandbox_options": {"isolation": "rlimits"}},  # its processes outlive the owner
    "docker": {"sandbox": "docker", "sandbox_options": {"image": TEST_IMAGE}},
}


def _container_exists(name: str) -> bool:
    import docker
    from cudaenv.sandbox.docker import docker_client

    try:
        docker_client().containers.get(name)
    except docker.errors.NotFound:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize(
    "sandbox",
    ["bubblewrap", "rlimits", pytest.param("docker", marks=pytest.mark.docker)],
)
def test_killed_driver_takes_its_ray_workers_and_sandboxes_down(
    cpu_problem_dir: Path, tmp_path: Path, sandbox: str
) -> None:
    """Everything the driver's Ray started, and the sandbox its episode had open (its
    processes, its dir or its container), is gone after the driver is SIGKILLed."""
    if sandbox == "docker":
        need_image(TEST_IMAGE, "docker/build-test-image.sh")
    else:
        from cudaenv.errors import SandboxError
        from cudaenv.sandbox.local import LocalSandbox

        try:
            LocalSandbox(isolation=sandbox).close()  # type: ignore[arg-type]
        except SandboxError as exc:
            pytest.skip(f"isolation {sandbox!r} unusable here: {exc}")
    tag = f"cudaenv-ray-orphan-{uuid.uuid4().hex[:8]}"
    report = tmp_path / "episode.json"
    options = json.dumps(SANDBOXES[sandbox])
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(cpu_problem_dir.parent), tag, str(report), options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _poll(lambda: report.exists() and report.read_text(), "the episode never started")
        made = json.loads(report.read_text())
        [sandbox_pid] = _poll(lambda: _tagged(tag), "the sandbox's process never started")
        ray_procs = [
            Owner(pid, proc_start(pid) or "") for pid in _descendants(driver.pid) if _is_ray(pid)
        ]
        assert made["worker"] in {o.pid for o in ray_procs}, "the actor is one of Ray's"
        assert len(ray_procs) > 2
        if made["container"]:
            assert _container_exists(made["container"])
        else:
            assert Path(made["root"]).is_dir()
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    watched = [*ray_procs, Owner(sandbox_pid, proc_start(sandbox_pid) or "")]
    _poll(lambda: not [o for o in watched if o.alive()], "processes outlived the driver")
    if made["container"]:
        _poll(lambda: not _container_exists(made["container"]), "the container stayed")
    else:
        _poll(lambda: not Path(made["root"]).exists(), "the sandbox dir stayed")
    assert _tagged(tag) == []
