"""``cudaenv eval``: progress, summary.json, resume, agents by name, errors as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.rollout import ResultStore
from tests.agents.scripted_server import ScriptedServer, tool_call
from tests.conftest import CPU_SOLUTION

runner = CliRunner()


def _eval(*args: str):
    return runner.invoke(app, ["eval", *args], terminal_width=200)


def test_eval_oracle_and_nop_write_summaries(cpu_problem_dir: Path, tmp_path: Path) -> None:
    src = str(cpu_problem_dir.parent)
    out = tmp_path / "oracle"
    res = _eval(
        "--agent",
        "oracle",
        "--source",
        src,
        "--attempts",
        "2",
        "--k",
        "1,2",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"] == {"pass@1": 1.0, "pass@2": 1.0}
    assert summary["groups"]["cuda-kernels"]["pass_at_k"]["pass@1"] == 1.0
    assert summary["status_counts"] == {"ok": 2, "agent_error": 0, "infrastructure": 0}
    assert summary["infrastructure_failures"] == 0 and summary["agent"] == "oracle"
    assert "pass@1" in res.output and "cuda-kernels" in res.output
    again = _eval("--agent", "oracle", "--source", src, "--attempts", "2", "--out", str(out))
    assert (
        again.exit_code == 0 and len(list(ResultStore(out).records())) == 2
    )  # resumed: nothing rerun

    nop = tmp_path / "nop"
    res = _eval("--agent", "nop", "--source", src, "--out", str(nop))
    assert res.exit_code == 0, res.output
    assert json.loads((nop / "summary.json").read_text())["pass_at_k"]["pass@1"] == 0.0


def test_eval_openai_agent_against_scripted_server(cpu_problem_dir: Path, tmp_path: Path) -> None:
    script = [
        tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION),
        tool_call("submit"),
    ]
    with ScriptedServer(script) as srv:
        res = _eval(
            "--agent",
            "openai",
            "--model",
            "scripted",
            "--base-url",
            srv.base_url,
            "--source",
            str(cpu_problem_dir.parent),
            "--workers",
            "1",
            "--out",
            str(tmp_path / "o"),
        )
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] == 1.0 and summary["model"] == "scripted"
    traj = next(ResultStore(tmp_path / "o", "trajectories").records())["trajectory"]
    assert traj["agent"] == "openai" and traj["usage"]["turns"] == 2


def test_eval_errors_are_one_line(cpu_problem_dir: Path, tmp_path: Path) -> None:
    src = str(cpu_problem_dir.parent)
    for args, msg in [
        (["--agent", "openai"], "needs --model"),
        (["--agent", "oracle", "--model", "x"], "apply to --agent openai | claude-code"),
        (["--image", "some:image"], "--sandbox docker only"),
        (["--agent", "gpt"], "unknown agent"),
        (["--mode", "optimize"], "no problems selected"),
        (["--sandbox", "vm"], "unknown sandbox"),
    ]:
        res = _eval(*args, "--source", src, "--out", str(tmp_path / "x"))
        assert res.exit_code == 2, (args, res.output)
        assert msg in res.output and "Traceback" not in res.output


def test_speedup_plot_is_a_real_png(tmp_path) -> None:
    """The optimize-mode plot, from verdicts as a GPU run produces them."""
    import types

    from cudaenv.cli.eval import _plot_speedups
    from cudaenv.grading.verdict import Verdict

    rows = [
        types.SimpleNamespace(verdict=Verdict(task_id=f"t{i}", passed=True, speedup=s))
        for i, s in enumerate([0.8, 1.1, 1.5, 2.0, 3.2, 1.2])
    ]
    rows.append(types.SimpleNamespace(verdict=Verdict(task_id="x", passed=False, speedup=9.0)))
    message = _plot_speedups(rows, tmp_path / "speedup.png")
    assert "speedup plot" in message
    data = (tmp_path / "speedup.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert "no passing" in _plot_speedups(rows[-1:], tmp_path / "none.png")


@pytest.mark.docker
def test_eval_in_a_chosen_image(tmp_path: Path, eval_cpu_image: str) -> None:
    """Episodes and their grading in containers of the image given with --image."""
    image = eval_cpu_image
    out = tmp_path / "docker"
    args = ["--agent", "oracle", "--ids", "py-vector-add", "--sandbox", "docker"]
    res = _eval(*args, "--image", image, "--out", str(out))
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] == 1.0 and summary["infrastructure_failures"] == 0
