"""Shared fixtures: small problems built in the tests, a private cache dir."""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cudaenv.problems.directory import write_problem_dir

# keep every test's caches (builds, baselines, the profiler) away from the user's
os.environ.setdefault(
    "CUDAENV_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "cudaenv-test-cache")
)


def write_problem(
    root: Path, task_id: str, *, spec: dict | None = None, files: dict[str, str] | None = None
) -> Path:
    """Create an authoring directory ``root/task_id`` with a spec and the given files."""
    base = {
        "task_id": task_id,
        "date": "2026-11-01",
        "problem_type": "cuda_cpp",
        "group": "cuda-kernels",
        "prompt": f"Implement {task_id}.",
        "build_command": "nvcc -I include -o test.out solution.cu test/*.cu",
        "test_command": "./test.out",
        "metadata": {"difficulty": "easy", "tags": ["t"]},
    }
    texts = {rel: textwrap.dedent(content) for rel, content in (files or {}).items()}
    return write_problem_dir(root, {**base, **(spec or {})}, texts)


CPU_HEADER = "int add(int a, int b);\n"
CPU_TEST = """\
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "add.h"
static char g_token[160];
int main() {
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    if (add(2, 3) != 5 || add(-4, 4) != 0) { printf("FAIL\\n"); return 1; }
    printf("CUDAENV_COMPLETE %s\\n", g_token);
    return 0;
}
"""
CPU_SOLUTION = '#include "add.h"\nint add(int a, int b) { return a + b; }\n'


@pytest.fixture
def cpu_problem_dir(tmp_path: Path) -> Path:
    """A C++ problem whose harness runs on the CPU (requires_gpu: false): the whole grading
    pipeline, completion token included, runs here without a GPU."""
    return write_problem(
        tmp_path / "suite",
        "cpu-add",
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": CPU_SOLUTION,
        },
    )


def sandbox_dirs() -> set[str]:
    """This process's local sandbox directories (agent and grading sandboxes alike)."""
    parent = Path(tempfile.gettempdir()).resolve() / "cudaenv-sandboxes"
    mine = f"{os.getpid()}-"
    return (
        {p.name for p in parent.iterdir() if p.name.startswith(mine)} if parent.is_dir() else set()
    )


def descendants() -> set[int]:
    """Live (non-zombie) processes descending from this one."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            parent_of[int(entry)] = int(fields[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier} - found
        found |= frontier
    return found


def need_image(image: str, build_hint: str = "docker/build-images.sh") -> object:
    """Skip unless the Docker engine answers and holds ``image`` (built here, never pulled);
    the engine's client."""
    pytest.importorskip("docker", reason="the docker extra is not installed")
    import docker
    from cudaenv.errors import SandboxError
    from cudaenv.sandbox.docker import docker_client

    try:
        client = docker_client()
    except SandboxError as exc:
        pytest.skip(f"Docker engine unreachable: {exc}")
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"image {image} missing; build it with {build_hint}")
    return client


@pytest.fixture
def eval_cpu_image() -> str:
    """The CPU evaluation image (docker/build-images.sh), or a skip saying why it is missing."""
    image = os.environ.get("CUDAENV_EVAL_CPU_IMAGE", "cudaenv-eval-cpu:latest")
    need_image(image)
    return image


def comparable_trajectory(traj: Any) -> dict[str, Any]:
    """A trajectory without what varies between two runs of one script (wall times, the
    verdict's details)."""
    data = traj.model_dump(mode="json", exclude={"seconds"})
    for step in data["steps"]:
        step.pop("duration_s")
    if traj.verdict is not None:
        data["verdict"] = {k: data["verdict"][k] for k in ("passed", "compiled", "failure")}
    return data
