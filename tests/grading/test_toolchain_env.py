"""The grader's command environment comes from the sandbox (``Sandbox.toolchain_env``).

A local sandbox runs the host's toolkit, so grading commands get the host toolkit's
variables; a sandbox that brings its own toolchain (a container image) gets none of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading.build_cache import build_key
from cudaenv.problems import Problem, load_suite
from cudaenv.problems.model import SourceFile
from cudaenv.sandbox.base import Sandbox
from cudaenv.sandbox.local import LocalSandbox
from cudaenv.toolkit import toolkit_env
from tests.conftest import write_problem


class _OwnToolchain(LocalSandbox):
    """A local sandbox that claims its own toolchain, as DockerSandbox does with its image."""

    def toolchain_env(self) -> dict[str, str]:
        return {"OWN_TOOLCHAIN": "1"}

    @property
    def toolchain_id(self) -> str:
        return "test:own"


def _problem(tmp_path: Path, check: str, *, requires_gpu: bool = False) -> Problem:
    """A problem whose build passes only when ``check`` holds in the build's environment."""
    d = write_problem(
        tmp_path,
        "toolchain-env",
        spec={
            "build_command": f"{check} && echo built > build.txt",
            "test_command": "test -f build.txt",
            "metadata": {"requires_gpu": requires_gpu},
        },
        files={"test/readme.txt": "x"},
    )
    return load_suite(d)["toolchain-env"]


def test_local_sandbox_brings_the_host_toolkit_env() -> None:
    with LocalSandbox(isolation="rlimits") as box:
        assert box.toolchain_env() == toolkit_env()
        assert box.toolchain_id == "host"


def test_grader_uses_the_sandboxes_toolchain_env(tmp_path) -> None:
    host_path = toolkit_env().get("PATH", "")
    check = f'test "$OWN_TOOLCHAIN" = 1 && test "$PATH" != {host_path!r}'
    problem = _problem(tmp_path, check)
    files = {"solution.sh": "true\n"}
    own = cudaenv.grade(
        problem, files, sandbox=lambda: _OwnToolchain(isolation="rlimits"), build_cache=False
    )
    assert own.stages["build"].status == "ok" and own.passed is True, own
    host = cudaenv.grade(
        problem, files, sandbox=lambda: LocalSandbox(isolation="rlimits"), build_cache=False
    )
    assert host.stages["build"].status == "failed", host


def test_build_cache_key_covers_the_toolchain() -> None:
    files = [SourceFile(path="a.cu", content="x")]
    assert build_key(files, "nvcc a", "cuda_cpp") == build_key(files, "nvcc a", "cuda_cpp", "host")
    assert build_key(files, "nvcc a", "cuda_cpp", "docker:sha256:1") != build_key(
        files, "nvcc a", "cuda_cpp", "docker:sha256:2"
    )


def test_local_sandbox_keeps_the_host_default() -> None:
    assert LocalSandbox.toolchain_env is Sandbox.toolchain_env


class _NoGpuAccess(LocalSandbox):
    """A sandbox that cannot reach the host's GPUs (like a container started without --gpus)."""

    @property
    def gpu_access(self) -> bool:
        return False


def test_gpu_stages_follow_the_sandbox_not_the_host(tmp_path, monkeypatch) -> None:
    """On a host with a GPU, a sandbox without access to it still skips the GPU stages as
    "no GPU" (never fails them as the solution's fault). The host GPU is stood in for: this
    machine has none, and the decision under test is the grader's."""
    import cudaenv.grading.grader as grader
    from cudaenv.toolkit import GpuInfo

    monkeypatch.setattr(
        grader, "gpu_info", lambda: GpuInfo(name="NVIDIA H200", driver="580", toolkit="13.0")
    )
    problem = _problem(tmp_path, "true", requires_gpu=True)
    v = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox=_NoGpuAccess)
    assert v.compiled and v.passed is None and v.gpu is None
    assert v.stages["test"].status == "skipped" and v.stages["test"].reason == "no GPU"


def _cublas_header(root: Path, version: str) -> Path:
    inc = root / "include"
    inc.mkdir(parents=True)
    lines = [
        f"#define CUBLAS_VER_{k} {v}"
        for k, v in zip(("MAJOR", "MINOR", "PATCH", "BUILD"), version.split("."), strict=True)
    ]
    (inc / "cublas_api.h").write_text("\n".join(lines) + "\n")
    return inc


def test_cublas_headers_from_another_release_are_an_error_naming_both(tmp_path) -> None:
    from cudaenv.toolkit import cublas_mismatch, header_cublas_version

    assert header_cublas_version(_cublas_header(tmp_path / "a", "13.10.0.1")) == "13.10.0.1"
    why = cublas_mismatch("13.0", "13.10.0.1")
    assert why is not None and "13.10.0.1" in why and "13.0" in why
    assert cublas_mismatch("13.0", "13.1.0.3") is None  # what cuda-toolkit 13.0.2 ships
    assert cublas_mismatch("12.8", "13.1.0.3") is not None
    assert cublas_mismatch("14.0", "14.2.0.1") is None  # unknown release: the major decides


def test_the_installed_cublas_wheel_matches_the_toolkit() -> None:
    """The pinned wheel and the toolkit here agree (a build linking cuBLAS is not refused)."""
    from cudaenv import toolkit

    wheel = toolkit._wheel_cublas()
    if wheel is None or toolkit.toolkit_version() is None:
        pytest.skip("no nvidia-cublas wheel or no CUDA toolkit here")
    version = toolkit.header_cublas_version(wheel[0])
    assert toolkit.cublas_mismatch(toolkit.toolkit_version(), version) is None, version
    toolkit.check_build_headers("nvcc -o t t.cu -lcublas")


def test_a_build_against_mismatched_headers_is_an_infrastructure_error(
    tmp_path, monkeypatch
) -> None:
    """The grader refuses the build with both versions named, as infrastructure."""
    from cudaenv import toolkit

    if toolkit.toolkit_version() is None:
        pytest.skip("no CUDA toolkit here")
    inc = _cublas_header(tmp_path / "wheel", "9.9.0.1")
    monkeypatch.setattr(toolkit, "_wheel_cublas", lambda: (inc, tmp_path / "wheel" / "lib"))
    problem = _problem(tmp_path, "true -lcublas")
    verdict = cudaenv.grade(
        problem,
        {"solution.sh": "true\n"},
        sandbox=lambda: LocalSandbox(isolation="rlimits"),
        build_cache=False,
    )
    assert verdict.failure == "infrastructure", verdict
    assert "9.9.0.1" in verdict.reason and toolkit.toolkit_version() in verdict.reason


def _fake_wheel_lib(root: Path) -> Path:
    lib = root / "lib"
    lib.mkdir(parents=True)
    for name in ("libcublas.so.13", "libcublasLt.so.13"):
        (lib / name).write_bytes(b"")
    return lib


def test_cublas_links_follow_the_wheel_they_were_made_for(tmp_path) -> None:
    """A cache shared by two environments gives each its own links: the second wheel's build
    never finds a link into the first (gone, or hidden from its sandbox)."""
    from cudaenv.toolkit import link_dir_for

    first = _fake_wheel_lib(tmp_path / "venv-a")
    second = _fake_wheel_lib(tmp_path / "venv-b")
    cache = tmp_path / "cache"
    a = link_dir_for(first, cache)
    b = link_dir_for(second, cache)
    assert a != b
    assert (a / "libcublas.so").resolve() == (first / "libcublas.so.13").resolve()
    assert (b / "libcublasLt.so").resolve() == (second / "libcublasLt.so.13").resolve()
    assert link_dir_for(first, cache) == a  # stable: the same wheel finds its links again


def test_a_stale_cublas_link_is_replaced(tmp_path) -> None:
    """A link left pointing elsewhere (a dangling one included) is remade, not kept."""
    from cudaenv.toolkit import link_dir_for

    lib = _fake_wheel_lib(tmp_path / "venv")
    made = link_dir_for(lib, tmp_path / "cache")
    (made / "libcublas.so").unlink()
    (made / "libcublas.so").symlink_to(tmp_path / "gone" / "libcublas.so.12")
    assert not (made / "libcublas.so").exists()  # dangling
    assert link_dir_for(lib, tmp_path / "cache") == made
    assert (made / "libcublas.so").resolve() == (lib / "libcublas.so.13").resolve()
    assert sorted(p.name for p in made.iterdir()) == ["libcublas.so", "libcublasLt.so"]
