"""Progress in logs: a plain flushed line per finished item and a summary line off a terminal
(through the real CLI, output captured to a non-tty), the rich bar on a terminal; honest
summary tables where nothing could run."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.cli.progress import Reporter, summary_table
from cudaenv.grading.summary import Graded, summarise
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.problems.datapack import write_solution_datapack
from cudaenv.problems.model import Solution, SourceFile
from cudaenv.toolkit import has_gpu
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem

runner = CliRunner()
ITEM = re.compile(r"^\[\s*(\d+)/(\d+)\] (\S+)  (.+?)(?:  (\d+\.\d)s)?(?:  (.*))?$")


class FlushCountingFile(io.StringIO):
    """A real text file object that counts its flushes (a log file is not a terminal)."""

    flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _items(output: str) -> list[re.Match[str]]:
    return [m for m in map(ITEM.match, output.splitlines()) if m]


def test_reporter_off_a_terminal_prints_and_flushes_a_line_per_item() -> None:
    out, clock = FlushCountingFile(), FakeClock()
    console = Console(file=out, width=200)
    assert not console.is_terminal
    with Reporter(console, "grading", 3, completed=1, clock=clock) as report:
        report.item("a#0", "passed", 1.25)
        assert out.getvalue().splitlines() == ["[2/3] a#0  passed  1.2s"]
        assert out.flushes >= 1  # the line is out before the next item finishes
        clock.now += 42.0
        report.item("b#0", "failed", 0.5, "tests failed: exit code 1\nmore output")
    lines = out.getvalue().splitlines()
    assert lines[1] == "[3/3] b#0  failed  0.5s  tests failed: exit code 1"
    assert lines[2] == (
        "grading: 3/3 finished in 42.0s: failed 1, passed 1 (1 from an earlier run)"
    )
    assert len(lines) == 3


def test_reporter_on_a_terminal_draws_the_bar_not_lines() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with Reporter(console, "validating", 2) as report:
        report.item("a", "ok", 1.0)
        report.item("b", "FAIL", 2.0, "reference fails its tests", warn=True)
    text = out.getvalue()
    assert "[1/2]" not in text and "finished in" not in text  # no plain lines
    assert "validating" in text and "2/2" in text  # the bar's last frame
    assert "b: FAIL reference fails its tests" in text  # a warning goes above the bar


def _gpu_problem(root: Path) -> Path:
    """Built with g++ (fast here) but its tests need a GPU: graded here as not run."""
    return write_problem(
        root,
        "gpu-add",
        spec={"build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp"},
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
        },
    )


def test_grade_prints_a_line_per_solution_and_a_summary(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    wrong = CPU_SOLUTION.replace("a + b", "a - b")
    sols = write_solution_datapack(
        [
            Solution(task_id="cpu-add", files=[SourceFile(path="solution.cpp", content=c)])
            for c in (CPU_SOLUTION, wrong)
        ],
        tmp_path / "sols.tar.gz",
    )
    args = ["grade", str(sols), "--source", str(cpu_problem_dir.parent), "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    items = _items(result.output)
    assert sorted((m[3], m[4]) for m in items) == [("cpu-add#0", "passed"), ("cpu-add#1", "failed")]
    assert all(m[2] == "2" and m[5] for m in items)  # position of 2, seconds on each line
    assert "grading: 2/2 finished in" in result.output
    assert "failed 1, passed 1" in result.output
    again = runner.invoke(app, args)  # resumed: no item lines, the summary says why
    assert again.exit_code == 0 and not _items(again.output)
    assert "grading: 2/2 finished in" in again.output and "2 from an earlier run" in again.output


@pytest.mark.skipif(has_gpu(), reason="with a GPU the tests run to a decision")
def test_grade_without_a_gpu_reports_not_run_not_zero(tmp_path: Path) -> None:
    problem = _gpu_problem(tmp_path / "suite")
    sols = tmp_path / "sols" / "gpu-add"
    sols.mkdir(parents=True)
    (sols / "solution.cpp").write_text(CPU_SOLUTION)
    out = tmp_path / "out"
    args = ["grade", str(sols.parent), "--source", str(problem.parent), "--out", str(out)]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    ((_, _, name, status, *_),) = [m.groups() for m in _items(result.output)]
    assert (name, status) == ("gpu-add#0", "not run")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] is None and summary["not_run"] == 1
    assert summary["groups"]["cuda-kernels"]["not_run"] == 1
    assert "not run (no GPU): 1" in result.output
    assert "1 sample(s) not run to a decision" in result.output


def test_validate_through_a_pipe_prints_a_line_per_problem(tmp_path: Path) -> None:
    """A real subprocess whose stdout is a pipe, as under CI or nohup."""
    cpu = write_problem(
        tmp_path / "suite",
        "cpu-add",
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "metadata": {"requires_gpu": False},
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
        },
    )
    _gpu_problem(cpu.parent)
    proc = subprocess.run(
        [sys.executable, "-c", "from cudaenv.cli import main; main()", "validate", str(cpu.parent)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {m[3]: m[4] for m in _items(proc.stdout)}
    gpu = has_gpu()
    assert found == {"cpu-add": "ok", "gpu-add": "ok" if gpu else "ok (not run: no GPU)"}
    assert all(m[5] for m in _items(proc.stdout))
    assert "validating: 2/2 finished in" in proc.stdout
    assert gpu or "1 of them compiled only (GPU stages not run: no GPU)" in proc.stdout


def test_eval_prints_a_line_per_episode(tmp_path: Path, cpu_problem_dir: Path) -> None:
    args = ["eval", "--agent", "oracle", "--source", str(cpu_problem_dir.parent)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    ((_, total, name, status, seconds, _),) = [m.groups() for m in _items(result.output)]
    assert (total, name, status) == ("1", "cpu-add#0", "passed") and seconds
    assert "episodes: 1/1 finished in" in result.output


def test_redteam_prints_a_line_per_exploit() -> None:
    result = runner.invoke(app, ["redteam", "--only", "read-env-vars"])
    assert result.exit_code == 0, result.output
    ((_, total, name, status, seconds, _),) = [m.groups() for m in _items(result.output)]
    assert (total, name, status) == ("1", "read-env-vars", "blocked") and seconds
    assert "red team: 1/1 finished in" in result.output


def _skipped(task_id: str) -> Verdict:
    return Verdict(
        task_id=task_id,
        compiled=True,
        stages={"test": StageResult(status="skipped", reason="no GPU")},
        reason="compiled; GPU stages skipped (no GPU)",
    )


def test_summary_table_says_not_run_with_the_count_per_group() -> None:
    rows = [
        Graded(task_id="k", group="kernels", verdict=Verdict(task_id="k", passed=True)),
        Graded(task_id="r1", group="runtime", verdict=_skipped("r1")),
        Graded(task_id="r2", group="runtime", verdict=_skipped("r2")),
        Graded(
            task_id="r2",
            group="runtime",
            sample=1,
            verdict=Verdict(task_id="r2", failure="infrastructure", reason="sandbox died"),
        ),
    ]
    out = io.StringIO()
    Console(file=out, width=200).print(summary_table(summarise(rows), [1], "t"))
    by_group = {line.split("│")[1].strip(): line for line in out.getvalue().splitlines()[4:7]}
    assert "not run (no GPU): 2" in by_group["runtime"] and "1.000" in by_group["kernels"]
    assert "1.000" in by_group["all"]  # over the samples that ran; the column counts the rest
    cells = [c.strip() for c in by_group["all"].split("│")[1:-1]]
    assert cells == ["all", "4", "2", "1", "1.000"]  # samples, not run, infra, pass@1
