"""Harbor export: the task layout, harbor's own task model, and the verifier it runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.grading.verdict import Verdict
from cudaenv.interop.harbor_export import export_problem, export_suite, gpu_types
from cudaenv.interop.harbor_verify import rewards
from cudaenv.problems import load_suite
from cudaenv.problems.directory import load_problem_dir

REPO = Path(__file__).resolve().parents[2]
# loads every task directory given with harbor's own model and reports what it parsed
HARBOR_SCRIPT = """
import json, sys
from pathlib import Path
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_verifier_environment_definition as verifier_env
out = {}
for d in sys.argv[1:]:
    t = Task(Path(d))
    c, e = t.config, t.config.environment
    out[Path(d).name] = {
        "name": t.name, "instruction": t.instruction, "gpus": e.gpus, "gpu_types": e.gpu_types,
        "workdir": e.workdir, "network_mode": e.network_mode.value, "cpus": e.cpus,
        "memory_mb": e.memory_mb, "docker_image": e.docker_image,
        "verifier_mode": c.verifier.environment_mode.value, "verifier_timeout": c.verifier.timeout_sec,
        "agent_timeout": c.agent.timeout_sec, "keywords": c.task.keywords,
        "metadata": c.metadata, "test": str(t.paths.discovered_test_path_for(e.os)),
        "solve": str(t.paths.solve_path), "env_dir": str(t.paths.environment_dir),
        "artifacts": [a if isinstance(a, str) else a.source for a in c.artifacts],
        "verifier_env_dir": str(verifier_env(c, t.paths).directory),
    }
print(json.dumps(out))
"""


def _env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess that imports cudaenv from this checkout."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


# ----------------------------------------------------------------------------- export


@pytest.mark.slow
def test_exported_suite_loads_in_harbor(tmp_path: Path, harbor_python: str) -> None:
    suite = load_suite("builtin")
    tasks = export_suite(suite, tmp_path / "tasks")
    res = subprocess.run(
        [harbor_python, "-c", HARBOR_SCRIPT, *map(str, tasks)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    parsed = json.loads(res.stdout)
    assert len(parsed) == len(suite)
    for problem, task in zip(suite, tasks, strict=True):
        got = parsed[task.name]
        assert got["name"] == f"cudaenv/{task.name}"
        assert problem.prompt.strip()[:200] in got["instruction"]
        assert (
            got["gpus"] == 1
            and got["workdir"] == "/workspace"
            and got["network_mode"] == "no-network"
        )
        assert got["gpu_types"] == gpu_types(problem)
        assert got["verifier_mode"] == "separate" and got["verifier_timeout"] >= 600
        # a fresh container from environment/ grades, with only the workspace copied over
        assert got["artifacts"] == ["/workspace"] and got["verifier_env_dir"] == got["env_dir"]
        assert got["agent_timeout"] > 0 and got["cpus"] and got["memory_mb"]
        assert problem.group in got["keywords"]
        assert got["metadata"]["task_id"] == problem.task_id
        assert got["docker_image"] is None and Path(got["env_dir"], "Dockerfile").is_file()
        assert Path(got["test"]) == task / "tests" / "test.sh"
        assert Path(got["solve"]).is_file()


def test_export_layout_keeps_hidden_files_out_of_the_image(tmp_path: Path) -> None:
    suite = load_suite("builtin")
    tasks = export_suite(suite, tmp_path)
    for problem, task in zip(suite, tasks, strict=True):
        env = task / "environment"
        env_files = {p.relative_to(env).as_posix() for p in env.rglob("*") if p.is_file()}
        context = {f.path for f in problem.context_files}
        assert env_files == context | {"Dockerfile", ".dockerignore"} or (
            env_files == {"Dockerfile"} and not context
        )
        visible = "\n".join(
            [(task / "instruction.md").read_text(), *((env / p).read_text() for p in env_files)]
        )
        hidden = [f.content for f in (*problem.test_files, *problem.check_files)]
        hidden += [f.content for f in problem.solution.files] if problem.solution else []
        hidden += (
            [f.content for f in problem.baseline_solution.files]
            if problem.baseline_solution
            else []
        )
        assert not [h for h in hidden if h.strip() and h in visible], task.name
        dockerfile = (env / "Dockerfile").read_text()
        assert "ARG CUDAENV_IMAGE=" in dockerfile and "FROM ${CUDAENV_IMAGE}" in dockerfile
        # the hidden tests travel in tests/, the reference only in solution/
        embedded = load_problem_dir(task / "tests" / "problem")
        assert embedded.test_files == problem.test_files and embedded.solution is None
        assert embedded.check_files == problem.check_files  # a split harness's checker too
        assert embedded.checker == problem.checker
        assert embedded.context_files == problem.context_files
        assert embedded.baseline_solution == problem.baseline_solution
        assert "cudaenv.interop.harbor_verify" in (task / "tests" / "test.sh").read_text()
        solve = (task / "solution" / "solve.sh").read_text()
        assert problem.solution is not None
        assert all(f"cat > {f.path} <<" in solve for f in problem.solution.files)


def test_exported_tasks_load_back_as_harbor_problems(tmp_path: Path) -> None:
    builtin = load_suite("builtin")
    export_suite(builtin, tmp_path)
    back = load_suite(tmp_path)
    assert len(back) == len(builtin)
    for p in builtin:
        q = back[f"cudaenv/{p.task_id}"]
        assert q.context_files == p.context_files
        assert q.reward_file == ".harbor/logs/verifier/reward.json"
        assert (
            q.needs_gpu == p.needs_gpu and q.problem_type == p.problem_type and q.group == p.group
        )
        assert q.prompt.startswith(p.prompt.strip())
        assert {f.path for f in q.test_files} >= {
            "tests/test.sh",
            "tests/problem/problem-spec.yaml",
        }
        assert q.solution is not None and [f.path for f in q.solution.files] == [
            "solution/solve.sh"
        ]


def test_gpu_types_follow_the_problem(cpu_problem_dir: Path) -> None:
    p = load_problem_dir(cpu_problem_dir)
    assert gpu_types(p.model_copy(update={"compute_capability": "10.0"})) == ["B200"]
    assert gpu_types(p.model_copy(update={"compute_capability": "9.0"})) == ["B200", "H100", "H200"]
    assert gpu_types(
        p.model_copy(update={"compute_capability": "8.0", "requires_datacenter_gpu": True})
    ) == ["A100", "B200", "H100", "H200"]
    assert gpu_types(p.model_copy(update={"compute_capability": None})) is None
    text = (export_problem(p, Path(tempfile.mkdtemp())) / "task.toml").read_text()
    assert "gpus = 0" in text and "gpu_types" not in text  # a CPU-only problem asks for no GPU


def test_cli_export_harbor(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "tasks"
    res = runner.invoke(
        app, ["export-harbor", "builtin", str(out), "--ids", "reduce-sum,transpose"]
    )
    assert res.exit_code == 0, res.output
    assert "wrote 2 Harbor tasks" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["reduce-sum", "transpose"]
    again = runner.invoke(app, ["export-harbor", "builtin", str(out), "--ids", "reduce-sum"])
    assert again.exit_code == 2 and "exists" in again.output
    forced = runner.invoke(
        app, ["export-harbor", "builtin", str(out), "--ids", "reduce-sum", "--force"]
    )
    assert forced.exit_code == 0, forced.output


# ----------------------------------------------------------------------------- verify


def _verify(problem: Path, workdir: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "cudaenv.interop.harbor_verify",
        "--problem",
        str(problem),
        "--workdir",
        str(workdir),
    ]
    return subprocess.run(
        cmd, env=_env(CUDAENV_VERIFIER_DIR=str(logs)), capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_harbor_verify_rewards_the_reference_and_not_an_empty_workspace(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(cpu_problem_dir / "context", ws)
    shutil.copy(cpu_problem_dir / "solution" / "solution.cpp", ws / "solution.cpp")
    (ws / "build.log").write_text("stray text files are harmless\n")
    res = _verify(cpu_problem_dir, ws, tmp_path / "logs-ref")
    assert res.returncode == 0, res.stdout + res.stderr
    reward = json.loads((tmp_path / "logs-ref" / "reward.json").read_text())
    assert reward == {"reward": 1.0, "compiled": 1.0, "passed": 1.0}
    assert json.loads((tmp_path / "logs-ref" / "verdict.json").read_text())["passed"] is True

    empty = tmp_path / "empty"
    empty.mkdir()
    res = _verify(cpu_problem_dir, empty, tmp_path / "logs-nop")
    assert res.returncode == 1, res.stdout + res.stderr
    assert json.loads((tmp_path / "logs-nop" / "reward.json").read_text())["reward"] == 0


@pytest.mark.slow
def test_exported_oracle_scores_one_and_nop_zero(tmp_path: Path, cpu_problem_dir: Path) -> None:
    """Harbor's release gate, played without Docker: the image's files, then solve.sh (oracle)
    or nothing (nop), then tests/test.sh, which must leave reward 1 and 0."""
    task = export_problem(load_problem_dir(cpu_problem_dir), tmp_path / "tasks")
    for oracle, expected in ((True, 1.0), (False, 0.0)):
        ws, logs = tmp_path / f"ws-{oracle}", tmp_path / f"logs-{oracle}"
        shutil.copytree(
            task / "environment", ws, ignore=shutil.ignore_patterns("Dockerfile", ".dockerignore")
        )
        env = _env(
            CUDAENV_WORKDIR=str(ws), CUDAENV_VERIFIER_DIR=str(logs), CUDAENV_PYTHON=sys.executable
        )
        if oracle:
            solved = subprocess.run(
                ["bash", str(task / "solution" / "solve.sh")],
                env=env,
                capture_output=True,
                text=True,
            )
            assert solved.returncode == 0, solved.stderr
            assert (ws / "solution.cpp").read_text() == (
                cpu_problem_dir / "solution" / "solution.cpp"
            ).read_text()
        res = subprocess.run(
            ["bash", str(task / "tests" / "test.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert json.loads((logs / "reward.json").read_text())["reward"] == expected, (
            res.stdout + res.stderr
        )


def test_undecided_verdicts_write_no_reward() -> None:
    """No GPU for a GPU problem is not the agent's fault: Harbor must see a verifier error."""
    assert rewards(Verdict(task_id="t", compiled=True, passed=None)) is None
    assert rewards(Verdict(task_id="t", compiled=True, passed=True, speedup=2.5)) == {
        "reward": 1.0,
        "compiled": 1.0,
        "passed": 1.0,
        "speedup": 2.5,
    }


def test_exported_instruction_states_what_is_forbidden(tmp_path: Path) -> None:
    suite = load_suite("builtin")
    kernel = export_problem(suite["reduce-sum"], tmp_path / "k")
    text = (kernel / "instruction.md").read_text()
    assert "Not allowed in the solution" in text and "CUB" in text
    free = export_problem(suite["cub-device-scan"], tmp_path / "c")
    assert "Not allowed in the solution" not in (free / "instruction.md").read_text()
