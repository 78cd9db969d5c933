from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.problems import load_suite

runner = CliRunner()


def test_list_builtin_shows_problems() -> None:
    result = runner.invoke(app, ["list", "builtin"], terminal_width=200)
    assert result.exit_code == 0, result.output
    suite = load_suite("builtin")
    assert f"{len(suite)} problems" in result.output
    for p in suite:
        assert p.task_id in result.output


def test_list_filters(cpu_problem_dir: Path) -> None:
    result = runner.invoke(
        app, ["list", str(cpu_problem_dir.parent), "--tags", "nope"], terminal_width=200
    )
    assert result.exit_code == 0
    assert "0 problems" in result.output


def test_show_hides_tests_unless_asked(cpu_problem_dir: Path) -> None:
    src = str(cpu_problem_dir.parent)
    shown = runner.invoke(app, ["show", "cpu-add", "--source", src], terminal_width=200)
    assert shown.exit_code == 0
    assert "include/add.h" in shown.output and "CUDAENV_COMPLETE" not in shown.output
    hidden = runner.invoke(
        app, ["show", "cpu-add", "--source", src, "--hidden"], terminal_width=200
    )
    assert "CUDAENV_COMPLETE" in hidden.output and "return a + b" in hidden.output


def test_pack_round_trip(tmp_path: Path, cpu_problem_dir: Path) -> None:
    out = tmp_path / "pack.tar.gz"
    result = runner.invoke(app, ["pack", str(cpu_problem_dir.parent), str(out)])
    assert result.exit_code == 0, result.output
    assert [p.model_dump() for p in load_suite(out)] == [
        p.model_dump() for p in load_suite(cpu_problem_dir.parent)
    ]


def test_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    """Through the real console script: no traceback, exit code 2, the problem named."""
    proc = subprocess.run(
        [sys.executable, "-c", "from cudaenv.cli import main; main()", "show", "nope-nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "nope-nope" in proc.stderr
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cudaenv.cli import main; main()",
            "list",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr


@pytest.mark.parametrize(
    "command",
    [
        "list",
        "show",
        "pack",
        "grade",
        "validate",
        "baseline",
        "eval",
        "report",
        "compare",
        "export-harbor",
        "redteam",
    ],
)
def test_every_command_has_working_help(command: str) -> None:
    """Help texts are rich markup: a literal ``[/file]`` once crashed ``list --help``."""
    result = runner.invoke(app, [command, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
