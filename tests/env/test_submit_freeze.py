"""At submit the agent's sandbox is frozen before its files are collected: a process it left
running (exploit escape-background-process: a setsid loop rewriting solution.cpp) is dead by
then, so the files graded are the ones the agent's last action left."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import cudaenv
from tests.grading.local_box import LocalBox


def _host_pids_with(token: str) -> list[int]:
    """Live host processes whose command line contains ``token`` (zombies count as dead)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if token.encode() not in fh.read():
                    continue
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


class _Watched(LocalBox):
    """Records, at each listing of the workspace, which of the agent's leftovers still live."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.alive_at_listing: list[list[int]] = []

    def list_files(self) -> list[str]:
        self.alive_at_listing.append(_host_pids_with(self.token))
        return super().list_files()


def test_a_leftover_process_is_dead_before_the_workspace_is_collected(
    cpu_problem_dir: Path,
) -> None:
    token = f"leftover-{uuid.uuid4().hex}"
    boxes: list[_Watched] = []

    def factory() -> _Watched:
        boxes.append(_Watched(token))
        return boxes[-1]

    env = cudaenv.make(
        "cpu-add", source=str(cpu_problem_dir.parent), sandbox=factory, grading_sandbox="local"
    )
    try:
        env.reset(seed=0)
        env.step(
            {
                "tool": "bash",
                "args": {"command": f"setsid sh -c 'sleep 100000; :' {token} >/dev/null 2>&1 &"},
            }
        )
        deadline = time.monotonic() + 60  # a hang guard, not the assertion
        while not _host_pids_with(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _host_pids_with(token), "the leftover never started"
        env.step({"tool": "submit", "args": {}})
    finally:
        env.close()
    agent_box = boxes[0]
    assert agent_box.alive_at_listing, "the workspace was never listed"
    assert agent_box.alive_at_listing[0] == []  # frozen before the first listing
    assert _host_pids_with(token) == []
