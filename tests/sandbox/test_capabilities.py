"""The capabilities every backend reports (``network``, ``output_cap_bytes``) and the
compile-only sibling (``compile_sibling``), against real sandboxes: local under bubblewrap and
rlimits, and containers (marked docker; skipped without the engine or the test image)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cudaenv.errors import SandboxClosedError
from cudaenv.sandbox import Sandbox, SandboxLimits, make_sandbox
from cudaenv.sandbox._host import probe_bwrap
from cudaenv.sandbox.docker import sibling_options
from cudaenv.sandbox.options import DockerOptions
from tests.conftest import need_image

TEST_IMAGE = os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest")
needs_bwrap = pytest.mark.skipif(not probe_bwrap(), reason="bubblewrap is not usable here")
BACKENDS = [
    pytest.param(("local", {"isolation": "bubblewrap"}), marks=needs_bwrap, id="bubblewrap"),
    pytest.param(("local", {"isolation": "rlimits"}), id="rlimits"),
    pytest.param(("docker", {"image": TEST_IMAGE}), marks=pytest.mark.docker, id="docker"),
]


@pytest.fixture(params=BACKENDS)
def open_box(request: pytest.FixtureRequest) -> Iterator[Callable[..., Sandbox]]:
    """Makes sandboxes of one backend (closed after the test), given more options."""
    backend, base = request.param
    if backend == "docker":
        pytest.importorskip("docker", reason="the docker extra is not installed")
        need_image(TEST_IMAGE, "docker/build-test-image.sh")
    made: list[Sandbox] = []

    def open_one(**options: object) -> Sandbox:
        made.append(make_sandbox(backend, **base, **options))
        return made[-1]

    yield open_one
    for box in made:
        box.close()


def test_output_cap_bytes_is_what_exec_keeps(open_box: Callable[..., Sandbox]) -> None:
    box = open_box(limits=SandboxLimits(output_cap_bytes=100))
    assert box.output_cap_bytes == 100
    r = box.exec("seq 1 1000; seq 1 3 >&2", timeout=60)
    assert r.truncated and r.stderr == "1\n2\n3\n"
    dropped = len("".join(f"{i}\n" for i in range(1, 1001))) - 100
    assert f"[... {dropped} bytes truncated ...]" in r.stdout
    assert r.stdout.startswith("1\n2\n") and r.stdout.endswith("999\n1000\n")
    assert open_box().output_cap_bytes == SandboxLimits().output_cap_bytes


def test_network_is_what_was_asked(open_box: Callable[..., Sandbox]) -> None:
    assert open_box().network is False
    assert open_box(network=True).network is True


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    return server


@needs_bwrap
def test_local_compile_sibling_mounts_the_dirs_without_network(tmp_path: Path) -> None:
    rw, ro = tmp_path / "cache", tmp_path / "shim"
    rw.mkdir()
    ro.mkdir()
    (ro / "tool.sh").write_text("echo from the shim\n")
    server = _listener()
    probe = f"echo hi > /dev/tcp/127.0.0.1/{server.getsockname()[1]} && echo connected"
    limits = SandboxLimits(output_cap_bytes=321, max_processes=77)
    parent = make_sandbox("local", network=True, limits=limits, env={"MARK": "parent"})
    try:
        assert "connected" in parent.exec(probe, timeout=30).stdout
        assert not parent.exec(f"test -e {ro}/tool.sh", timeout=30).ok  # the host's /tmp hidden
        parent.write_file("mine.txt", "parent's")
        sibling = parent.compile_sibling(rw_binds=[str(rw)], ro_binds=[str(ro)])
        assert sibling is not None
        with sibling:
            assert (sibling.isolation, sibling.network) == ("bubblewrap", False)
            assert sibling.output_cap_bytes == 321 and sibling.limits == limits  # type: ignore[attr-defined]
            assert sibling.list_files() == []  # a workspace of its own
            assert sibling.exec("echo $MARK", timeout=30).stdout == "parent\n"
            r = sibling.exec(f"bash {ro}/tool.sh && echo built > {rw}/obj.o", timeout=30)
            assert r.ok and r.stdout == "from the shim\n", r.stderr
            assert not sibling.exec(f"touch {ro}/x", timeout=30).ok
            off = sibling.exec(probe, timeout=30)
            assert off.exit_code != 0 and "connected" not in off.stdout
        assert (rw / "obj.o").read_text() == "built\n" and not (ro / "x").exists()
        assert parent.read_file("mine.txt") == b"parent's" and parent.network
        assert not parent.exec(f"test -e {rw}/obj.o", timeout=30).ok  # binds: the sibling's only
    finally:
        parent.close()
        server.close()
    with pytest.raises(SandboxClosedError):
        parent.compile_sibling(rw_binds=[str(rw)], ro_binds=[])


def test_local_compile_sibling_is_none_without_mount_isolation(tmp_path: Path) -> None:
    with make_sandbox("local", isolation="rlimits") as box:
        assert box.compile_sibling(rw_binds=[str(tmp_path)], ro_binds=[]) is None


def test_docker_sibling_options_drop_gpus_network_and_pool(tmp_path: Path) -> None:
    (tmp_path / "rw").mkdir()
    (tmp_path / "ro.txt").write_text("x")
    opts = DockerOptions(
        image="img", gpus=-1, network=True, pool="pool-1", extra_ro_binds=["/usr"], cpus=2
    )
    rw, ro, gone = (str(tmp_path / n) for n in ("rw", "ro.txt", "gone"))
    sib = sibling_options(opts, rw_binds=[rw, gone, ro], ro_binds=[ro, gone])
    assert (sib.gpus, sib.network, sib.pool, sib.gpu_access) == (None, False, "", False)
    assert (sib.image, sib.cpus, sib.limits) == ("img", 2, opts.limits)
    assert sib.extra_rw_binds == [rw]  # a missing dir (or a file) is no writable bind
    assert sib.extra_ro_binds == ["/usr", ro]
    assert (opts.gpus, opts.network, opts.pool) == (-1, True, "pool-1")  # unchanged


@pytest.mark.docker
def test_docker_compile_sibling_mounts_the_dirs_for_the_container_user(tmp_path: Path) -> None:
    pytest.importorskip("docker", reason="the docker extra is not installed")
    need_image(TEST_IMAGE, "docker/build-test-image.sh")
    rw, ro, gone = tmp_path / "cache", tmp_path / "shim", tmp_path / "gone"
    rw.mkdir()
    ro.mkdir()
    (ro / "tool.sh").write_text("echo from the shim\n")
    limits = SandboxLimits(output_cap_bytes=321)
    with make_sandbox(
        "docker", image=TEST_IMAGE, network=True, limits=limits, environment={"MARK": "parent"}
    ) as parent:
        sibling = parent.compile_sibling(rw_binds=[str(rw), str(gone)], ro_binds=[str(ro)])
        assert sibling is not None
        with sibling:
            assert (sibling.network, sibling.gpu_access, sibling.output_cap_bytes) == (
                False,
                False,
                321,
            )
            assert sibling.container_name != parent.container_name  # type: ignore[attr-defined]
            assert sibling.options.pool == "" and sibling.options.gpus is None  # type: ignore[attr-defined]
            assert sibling.exec("echo $MARK; id -u", timeout=30).stdout == "parent\n1000\n"
            r = sibling.exec(f"bash {ro}/tool.sh && echo built > {rw}/obj.o", timeout=30)
            assert r.ok and r.stdout == "from the shim\n", r.stderr
            assert not sibling.exec(f"touch {ro}/x", timeout=30).ok
            nets = sibling.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", timeout=30)
            assert nets.stdout.split() == ["lo"]
        assert (rw / "obj.o").read_text() == "built\n" and not (ro / "x").exists()
        assert not gone.exists()  # never created on the host for a bind
        assert not parent.exec(f"test -e {rw}", timeout=30).ok  # binds: the sibling's only
        assert parent.exec("echo up", timeout=30).stdout == "up\n"
