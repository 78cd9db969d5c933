"""The CPU images (docker/build-images.sh) against a real Docker engine, end to end.

``cudaenv-eval-cpu``: a bundled cuda_python problem played with the docker sandbox (agent and
grading both in containers of the image, numba-cuda's simulator) scores 1 for the oracle and
0 for the nop agent. ``cudaenv-agent-cpu``: the baked-in agent CLIs run inside a sandbox.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

pytest.importorskip("docker", reason="the docker extra is not installed")

import cudaenv
from cudaenv.agents.recipes import load_recipe
from cudaenv.agents.registry import make_agent
from cudaenv.env.trajectory import Trajectory
from cudaenv.sandbox.docker import DockerSandbox
from tests.conftest import need_image

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EVAL_IMAGE = os.environ.get("CUDAENV_EVAL_CPU_IMAGE", "cudaenv-eval-cpu:latest")
AGENT_IMAGE = os.environ.get("CUDAENV_AGENT_CPU_IMAGE", "cudaenv-agent-cpu:latest")
PROBLEM = "py-vector-add"


@pytest.fixture(scope="module")
def eval_image() -> str:
    need_image(EVAL_IMAGE)
    return EVAL_IMAGE


@pytest.fixture(scope="module")
def agent_box() -> Iterator[DockerSandbox]:
    need_image(AGENT_IMAGE)
    with DockerSandbox(image=AGENT_IMAGE) as box:
        yield box


def _play(agent: str, image: str) -> Trajectory:
    env = cudaenv.make(PROBLEM, sandbox="docker", sandbox_options={"image": image})
    try:
        return make_agent(agent).run(env)
    finally:
        env.close()


def test_commands_keep_the_image_environment(eval_image: str) -> None:
    """``env=`` is merged over the image's environment, and the sandbox adds no host paths."""
    with DockerSandbox(image=eval_image) as box:
        assert box.toolchain_env() == {}
        assert box.toolchain_id.startswith("docker:sha256:")
        res = box.exec(
            'echo "$PATH"; echo "$FOO"; command -v python',
            timeout=30,
            env={"FOO": "bar", "NUMBA_ENABLE_CUDASIM": "1"},
        )
        assert res.ok, res
        path, foo, python = res.stdout.splitlines()
        assert path.startswith("/opt/cudaenv-venv/bin:") and foo == "bar"
        assert python == "/opt/cudaenv-venv/bin/python"
        res = box.exec(
            "python -c 'import numba.cuda, nvtx; print(numba.cuda.is_available())'",
            timeout=120,
            env={"NUMBA_ENABLE_CUDASIM": "1"},
        )
        assert res.ok and res.stdout.strip() == "True", res


def test_oracle_scores_one_in_the_eval_image(eval_image: str) -> None:
    traj = _play("oracle", eval_image)
    assert traj.verdict is not None
    assert traj.reward == 1.0, traj.verdict
    assert traj.verdict.passed is True and traj.verdict.failure is None
    assert "simulator" in (traj.verdict.stages["test"].reason or "")


def test_nop_scores_zero_in_the_eval_image(eval_image: str) -> None:
    traj = _play("nop", eval_image)
    assert traj.reward == 0.0
    assert traj.verdict is not None and traj.verdict.passed is False
    assert traj.verdict.failure == "agent", traj.verdict


@pytest.mark.parametrize("name", ["claude-code", "opencode"])
def test_agent_cli_runs_in_the_agent_image(agent_box: DockerSandbox, name: str) -> None:
    """The CLI is on the image's PATH at its pinned version and runs as the sandbox user."""
    recipe = load_recipe(name)
    res = agent_box.exec(f"{recipe.binary} --version", timeout=60)
    assert res.ok, res
    assert recipe.version in res.stdout, res


def test_container_without_device_requests_has_no_gpu(eval_image: str) -> None:
    """The grader asks the sandbox, not the host, whether GPU stages can run."""
    with DockerSandbox(image=eval_image) as box:
        assert box.gpu_access is False
    with DockerSandbox(image=eval_image, gpus=None) as box:
        assert box.gpu_access is False


def test_benchmarks_in_an_image_use_the_images_profiler(eval_image: str) -> None:
    """A container is profiled with the profiler its image carries (found by running
    ``python -I -m cudaenv.grading.profiler --where`` there), never a host-built one on host
    paths. The CPU image has no CUDA toolkit, so the answer is a clear error naming it."""
    from cudaenv.errors import GradingError
    from cudaenv.grading.timing import sandbox_profiler

    with DockerSandbox(image=eval_image) as box:
        with pytest.raises(GradingError, match="has no usable cudaenv profiler") as info:
            sandbox_profiler(box)
        assert "docker:" in str(info.value) and "CUDA" in str(info.value)


def test_a_process_env_scores_one_in_the_eval_image(eval_image: str) -> None:
    """The env in a worker process drives Docker sandboxes as CudaEnv does (agent and grading)."""
    problem = cudaenv.load_suite("builtin")[PROBLEM]
    assert problem.solution is not None

    async def main() -> tuple:
        env = cudaenv.ProcessEnv(PROBLEM, sandbox="docker", sandbox_options={"image": eval_image})
        try:
            await env.areset()
            for f in problem.solution.files:
                await env.astep(
                    {"tool": "write_file", "args": {"path": f.path, "content": f.content}}
                )
            return await env.astep({"tool": "submit"})
        finally:
            await env.aclose()

    _, reward, terminated, _, info = asyncio.run(main())
    assert terminated and reward == 1.0, info.get("verdict")
    assert info["trajectory"].verdict.passed is True
