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
        root = str(env.sandbox.workspace.parent)
        Path(self.report).write_text(json.dumps({"worker": os.getpid(), "root": root}))
        time.sleep(1000)

suite, tag, report = sys.argv[1:4]
init_ray(num_cpus=1)
list(run_episodes(lambda: BlockingAgent(tag, report), [load_suite(suite)["cpu-add"]], use_ray=True))
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


@pytest.mark.slow
def test_killed_driver_takes_its_ray_workers_and_sandboxes_down(
    cpu_problem_dir: Path, tmp_path: Path
) -> None:
    tag = f"cudaenv-ray-orphan-{uuid.uuid4().hex[:8]}"
    report = tmp_path / "episode.json"
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(cpu_problem_dir.parent), tag, str(report)],
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
        assert len(ray_procs) > 2 and Path(made["root"]).is_dir()
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    watched = [*ray_procs, Owner(sandbox_pid, proc_start(sandbox_pid) or "")]
    _poll(lambda: not [o for o in watched if o.alive()], "processes outlived the driver")
    _poll(lambda: not Path(made["root"]).exists(), "the sandbox dir stayed")
    assert _tagged(tag) == []
