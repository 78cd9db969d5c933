"""``pip install 'cudaenv[verifiers]'`` is all ``vf-eval cudaenv`` needs: the wheel built
from this tree, installed into a fresh virtual environment (no clone on its path), resolves
the plugin and scores an episode against a scripted model server.

The venv sees this interpreter's packages (``--system-site-packages``) so nothing is
downloaded; the wheel is installed into it on its own, so ``import cudaenv`` finds the
wheel's copy, never the repository (the test runs from an empty directory, without
PYTHONPATH).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from tests.agents.scripted_server import ScriptedServer, tool_call
from tests.conftest import CPU_SOLUTION

ROOT = Path(__file__).resolve().parents[2]
ORACLE = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), tool_call("submit")]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd[:4]}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_vf_eval_cudaenv_from_the_wheel_alone(cpu_problem_dir: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HOME": str(tmp_path)}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # hatchling installed (the dev extra): build offline; else pip fetches it to build
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    wheels = tmp_path / "wheels"
    _run([*pip, "wheel", "--no-deps", *isolation, "-w", str(wheels), str(ROOT)], tmp_path, env)
    (wheel,) = wheels.glob("cudaenv-*.whl")
    venv = tmp_path / "venv"
    _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        tmp_path,
        env,
    )
    python = str(venv / "bin" / "python")
    into = [*pip, "--python", python, "install", "--no-index"]
    _run([*into, "--no-deps", "--ignore-installed", str(wheel)], tmp_path, env)
    # the extra's requirements resolve from what is installed: nothing else is needed
    _run([*into, "--dry-run", f"{wheel}[verifiers]"], tmp_path, env)
    where = _run([python, "-c", "import cudaenv; print(cudaenv.__file__)"], tmp_path, env)
    assert where.strip().startswith(str(venv)), where  # the wheel's copy, not the repository

    out = tmp_path / "out"
    vf_eval = "from verifiers.v1.cli.eval.main import main; main()"
    with ScriptedServer(ORACLE) as srv:
        cmd = [
            python,
            "-c",
            vf_eval,
            "cudaenv",
            "--env.taskset.source",
            str(cpu_problem_dir.parent),
        ]
        cmd += ["--model", "scripted", "--client.base-url", srv.base_url, "-n", "1", "-r", "1"]
        cmd += ["--no-push", "--output-dir", str(out)]
        _run(cmd, tmp_path, env)
    (traces,) = out.glob("*/traces.jsonl")
    (episode,) = [json.loads(line) for line in traces.read_text().splitlines()]
    assert episode["ok"] and episode["traces"][0]["rewards"]["cudaenv_reward"]["score"] == 1.0
