"""The Docker exploits of issue 27 (cudaenv/redteam/catalog_docker.py) with their defence
turned off, on real containers: each payload does find what it looks for where the defence
is missing, so the red team's 0 (``cudaenv redteam --sandbox docker``) is the defence's work.

- IPC between episodes: a pool lends a container once, never reset from inside. Off: the
  same container lent twice (one sandbox for both "episodes") keeps every object planted.
- The exec server's uid: the agent (uid 1000) cannot ptrace it
  (tests/sandbox/test_docker.py). Off: a process of the agent's own uid, which it can attach
  to, so nothing but the uid stands between the agent and the server.
- No problem data in an image: the search finds a reference wherever an image put one (here
  copied into the container, as a wheel carrying the suite once did).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from cudaenv.problems import load_suite
from cudaenv.redteam.catalog_docker import IMAGE_SEARCH, IPC_SCRIPT
from cudaenv.sandbox.docker import DockerSandbox, DockerSandboxPool
from tests.conftest import need_image

pytestmark = pytest.mark.docker

TEST_IMAGE = os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest")
MARKER = "rt0123456789abcdef"
KINDS = ["sysv-shm", "sysv-msg", "sysv-sem", "posix-mq"]


@pytest.fixture(scope="module")
def client() -> object:
    return need_image(TEST_IMAGE, "docker/build-test-image.sh")


@pytest.fixture
def box(client: object) -> Iterator[DockerSandbox]:
    with DockerSandbox(image=TEST_IMAGE) as sandbox:
        yield sandbox


def _ipc(sandbox: DockerSandbox, mode: str) -> str:
    sandbox.write_file("ipc.py", IPC_SCRIPT)
    return sandbox.exec(f"python3 ipc.py {mode} {MARKER}", timeout=30).stdout


def test_ipc_left_behind_is_found_only_in_a_reused_container(client: object) -> None:
    with DockerSandboxPool(TEST_IMAGE, size=1) as pool:
        first = pool.acquire()
        assert _ipc(first, "plant").split() == [w for k in KINDS for w in ("planted", k)]
        # the defence off: the same container again (what a reset from inside would lend)
        assert _ipc(first, "look").split() == [w for k in KINDS for w in ("FOUND-IPC:", k)]
        pool.release(first)
        second = pool.acquire()
        try:
            assert "FOUND-IPC" not in _ipc(second, "look")  # the defence on: a new container
        finally:
            pool.release(second)


def test_the_agent_can_ptrace_its_own_uid_so_the_servers_uid_is_the_defence(
    box: DockerSandbox,
) -> None:
    attach = (
        "import ctypes, os, subprocess, sys; libc = ctypes.CDLL(None, use_errno=True); "
        "p = subprocess.Popen(['sleep', '30']); r = libc.ptrace(16, p.pid, None, None); "
        "print(r, os.getuid()); p.kill()"
    )
    out = box.exec(f'python3 -c "{attach}"', timeout=30).stdout.split()
    assert out == ["0", "1000"], out  # PTRACE_ATTACH to a same-uid process works


def test_the_image_search_finds_a_reference_an_image_carries(box: DockerSandbox) -> None:
    ref = load_suite("builtin")["py-vector-add"].solution.files[0].content  # type: ignore[union-attr]
    box.exec("mkdir -p /tmp/site/cudaenv/_data/envs/cuda-python/py-vector-add/solution", timeout=10)
    box.write_file("ref.py", ref)
    place = "/tmp/site/cudaenv/_data/envs/cuda-python/py-vector-add/solution/solution.py"
    assert box.exec(f"mv ref.py {place}", timeout=10).ok
    out = box.exec(IMAGE_SEARCH, timeout=300).stdout
    assert f"LEAKED-IMAGE: {place}" in out, out[-2000:]
