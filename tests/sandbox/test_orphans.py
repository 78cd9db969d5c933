"""Nothing a SIGKILLed run leaves behind outlives the next run (real processes, signals,
containers, mounts and cgroups; no mocks).

Each test starts an owner process that makes a sandbox and prints what it made, SIGKILLs it
(so no cleanup code runs), checks the leftovers are really there, starts a new entry point in
another process and checks they are gone, while the sandbox of a live owner is untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cudaenv.errors import SandboxError
from cudaenv.sandbox._owners import Owner, boot_id, proc_start
from tests.conftest import need_image

# serial: every new cudaenv process sweeps the host's orphans once, so a test process running
# beside these could remove the orphan a test made before the test looks at it
pytestmark = pytest.mark.serial

TEST_IMAGE = os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest")
HANG_GUARD_S = 60.0  # only against a hang: every wait below ends as soon as its condition holds

# Owner: makes a sandbox, prints what it made (one JSON line), then with "wait" blocks until its
# stdin closes (SIGKILL it there) and closes the sandbox; without, closes at once (an entry point).
_LOCAL_OWNER = """
import json, os, sys
from cudaenv.sandbox.local import LocalSandbox
iso, tag, wait = sys.argv[1:4]
sb = LocalSandbox(isolation=iso)
sb.exec(f"(exec -a {tag} sleep 1000) &", timeout=30)
print(json.dumps({"root": str(sb.workspace.parent)}), flush=True)
if wait == "wait":
    sys.stdin.read()
sb.close()
"""
_DOCKER_OWNER = """
import json, sys
from cudaenv.sandbox.docker import DockerSandbox, DockerSandboxPool
kind, image, wait = sys.argv[1:4]
pool = DockerSandboxPool(image, size=1).start() if kind == "pool" else None
sb = pool.acquire() if pool else DockerSandbox(image=image)
print(json.dumps({"name": sb.container_name}), flush=True)
if wait == "wait":
    sys.stdin.read()
sb.close()
if pool:
    pool.close()
"""


def _owner(script: str, *args: str) -> tuple[subprocess.Popen[str], dict]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args, "wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the owner process failed (exit {proc.wait()})"
    return proc, json.loads(line)


def _entry_point(script: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", script, *args, "go"], check=True, timeout=300)


def _sigkill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _pids_tagged(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.split(b"\0")[0] == tag.encode() and state != "Z":
            found.append(int(entry))
    return found


def _wait_tagged(tag: str) -> list[int]:
    """The live processes named ``tag`` once there are any (the sandbox starts them async)."""
    end = time.monotonic() + HANG_GUARD_S
    while not (pids := _pids_tagged(tag)) and time.monotonic() < end:
        time.sleep(0.05)
    return pids


def _cgroups_of(pid: int, name: str) -> list[Path]:
    """The cgroup directories named ``name`` that ``pid`` is in (v1 and v2)."""
    dirs = []
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if Path(path).name != name:
            continue
        top = Path("/sys/fs/cgroup")
        base = top / controllers.split(",")[0].removeprefix("name=") if controllers else top
        dirs.append(base / path.lstrip("/"))
    return [d for d in dirs if d.is_dir()]


def _mounted(path: Path) -> bool:
    return any(
        line.split()[4] == str(path)
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
    )


def test_owner_identity_survives_pid_reuse_and_reboots() -> None:
    """A pid alone does not make an owner: another start time or boot id means it is dead."""
    me = Owner.me()
    assert me.alive() and me.start == proc_start(os.getpid()) and me.boot == boot_id() != ""
    assert not Owner(me.pid, "1", me.boot).alive()  # the pid now belongs to another process
    assert not Owner(me.pid, me.start, "0" * 8 + "-other-boot").alive()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not Owner(gone.pid).alive()
    assert Owner(me.pid).alive()  # unknown fields (older records) never make an owner dead
    assert Owner.parse(me.dump()) == me and Owner.parse("garbage") is None


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["rlimits", "bubblewrap"])
def test_local_sandbox_of_a_killed_owner_is_cleaned_by_the_next(isolation: str) -> None:
    """Dir, workspace tmpfs mount, cgroups and leftover processes of a SIGKILLed owner are
    removed by the next LocalSandbox; a live owner's sandbox keeps all of them."""
    from cudaenv.sandbox.local import LocalSandbox

    try:
        LocalSandbox(isolation=isolation).close()  # type: ignore[arg-type]
    except SandboxError as exc:
        pytest.skip(f"isolation {isolation!r} unusable here: {exc}")
    tags = {who: f"cudaenv-orphan-{who}-{uuid.uuid4().hex[:8]}" for who in ("dead", "live")}
    owners = {who: _owner(_LOCAL_OWNER, isolation, tag) for who, tag in tags.items()}
    seen = {}
    for who, (_, made) in owners.items():
        root = Path(made["root"])
        pids = _wait_tagged(tags[who])
        assert len(pids) == 1, f"the {who} owner's background process did not start"
        seen[who] = (root, pids[0], _cgroups_of(pids[0], root.name))
    live_proc = owners["live"][0]
    try:
        _sigkill(owners["dead"][0])
        root, _, cgroups = seen["dead"]
        assert root.is_dir()  # what the SIGKILL left behind
        if os.geteuid() == 0:
            assert _mounted(root / "workspace"), "root mounts a tmpfs quota on the workspace"
        _entry_point(_LOCAL_OWNER, isolation, f"cudaenv-orphan-entry-{uuid.uuid4().hex[:8]}")
        assert not root.exists()
        assert not _mounted(root / "workspace")
        assert [c for c in cgroups if c.exists()] == []
        assert _pids_tagged(tags["dead"]) == []
        live_root, live_pid, live_cgroups = seen["live"]
        assert live_root.is_dir() and _pids_tagged(tags["live"]) == [live_pid]
        assert all(c.is_dir() for c in live_cgroups)
        assert _mounted(live_root / "workspace") == (os.geteuid() == 0)
    finally:
        assert live_proc.stdin is not None
        live_proc.stdin.close()
        live_proc.wait(timeout=120)
    assert not seen["live"][0].exists()


@pytest.fixture(scope="module")
def client() -> object:
    return need_image(TEST_IMAGE, "docker/build-test-image.sh")


def _exists(client: object, name: str) -> bool:
    import docker

    try:
        client.containers.get(name)  # type: ignore[attr-defined]
    except docker.errors.NotFound:
        return False
    return True


def _gone(client: object, name: str, within_s: float = 60.0) -> bool:
    """Whether the container is gone, waiting while a removal is in progress (hang guard)."""
    deadline = time.monotonic() + within_s
    while _exists(client, name):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _remove_quietly(client: object, name: str) -> None:
    """Remove a test container unless it is gone or being removed by another process."""
    import docker

    with contextlib.suppress(docker.errors.APIError):  # NotFound is one too
        client.containers.get(name).remove(force=True)  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("entry", ["sandbox", "pool"])
def test_container_of_a_killed_owner_is_reaped_by_the_next_entry_point(
    client: object, entry: str
) -> None:
    """A SIGKILLed owner's container (and its host run dir) is removed by the next
    DockerSandbox or pool; a live owner's container and one without our labels are kept."""
    from cudaenv.sandbox.docker import LABEL_OWNER_PID, LABEL_RUN_DIR

    dead, made_dead = _owner(_DOCKER_OWNER, entry, TEST_IMAGE)
    live, made_live = _owner(_DOCKER_OWNER, entry, TEST_IMAGE)
    foreign = client.containers.run(  # type: ignore[attr-defined]
        TEST_IMAGE, ["sleep", "1000"], detach=True, init=True, network_mode="none",
        labels={"cudaenv-test": "no owner labels"},
    )  # fmt: skip
    try:
        _sigkill(dead)
        orphan = client.containers.get(made_dead["name"])  # type: ignore[attr-defined]
        assert orphan.labels[LABEL_OWNER_PID] == str(dead.pid)
        run_dir = Path(orphan.labels[LABEL_RUN_DIR])
        assert run_dir.is_dir()
        _entry_point(_DOCKER_OWNER, entry, TEST_IMAGE)
        assert not _exists(client, made_dead["name"])
        assert not run_dir.exists()
        assert _exists(client, made_live["name"])
        assert _exists(client, foreign.name)
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(timeout=120)
        foreign.remove(force=True)
    assert not _exists(client, made_live["name"])


@pytest.mark.docker
def test_reaping_judges_owners_by_start_time_and_boot(client: object) -> None:
    """Labels naming a live pid with another start time, or another boot, are orphans; those
    of the same pid, start time and boot (this process) are not."""
    from cudaenv.sandbox.docker import (
        LABEL_OWNER_BOOT,
        LABEL_OWNER_START,
        owner_labels,
        reap_orphans,
    )

    mine = owner_labels()
    made = {}
    for case, override in {
        "reused-pid": {LABEL_OWNER_START: "1"},
        "other-boot": {LABEL_OWNER_BOOT: "other-boot"},
        "same-owner": {},
    }.items():
        made[case] = client.containers.run(  # type: ignore[attr-defined]
            TEST_IMAGE, ["sleep", "1000"], detach=True, init=True, network_mode="none",
            labels={**mine, **override},
        )  # fmt: skip
    try:
        removed = reap_orphans()
        assert made["reused-pid"].name in removed and made["other-boot"].name in removed
        # another test process may be reaping the same orphans (its removal in progress: a 409
        # for ours), so wait for them to be gone; the wait is a hang guard, not the assertion
        assert _gone(client, made["reused-pid"].name) and _gone(client, made["other-boot"].name)
        assert made["same-owner"].name not in removed and _exists(client, made["same-owner"].name)
        assert mine["cudaenv.owner_host"] == socket.gethostname()
    finally:
        for container in made.values():
            _remove_quietly(client, container.name)
