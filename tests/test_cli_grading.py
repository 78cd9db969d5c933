"""`cudaenv grade` and `cudaenv validate` through the CLI, on CPU-runnable problems."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.datapack import write_solution_datapack
from cudaenv.problems.model import Solution, SourceFile
from cudaenv.rollout.store import ResultStore
from tests.conftest import CPU_SOLUTION, write_problem
from tests.rollout.conftest import cpu_suite

runner = CliRunner()
CUDAENV = Path(sys.executable).parent / "cudaenv"


def _solutions(tmp_path: Path) -> Path:
    wrong = CPU_SOLUTION.replace("a + b", "a - b")
    sols = [
        Solution(task_id="cpu-add", files=[SourceFile(path="solution.cpp", content=CPU_SOLUTION)]),
        Solution(task_id="cpu-add", files=[SourceFile(path="solution.cpp", content=wrong)]),
    ]
    return write_solution_datapack(sols, tmp_path / "cpu-add-solutions.tar.gz")


def test_grade_datapack_writes_results_and_resumes(tmp_path: Path, cpu_problem_dir: Path) -> None:
    out = tmp_path / "out"
    args = ["grade", str(_solutions(tmp_path)), "--source", str(cpu_problem_dir.parent)]
    args += ["--out", str(out), "--k", "1,2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = (out / "graded.jsonl").read_text().splitlines()
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    assert sorted(r["verdict"]["passed"] for r in records) == [False, True]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] == 0.5
    assert summary["pass_at_k"]["pass@2"] == 1.0
    assert summary["groups"]["cuda-kernels"]["samples"] == 2
    again = runner.invoke(app, args)  # resumable: nothing graded twice
    assert again.exit_code == 0
    assert len((out / "graded.jsonl").read_text().splitlines()) == 2


def test_grade_directory_of_solutions(tmp_path: Path, cpu_problem_dir: Path) -> None:
    sol_dir = tmp_path / "sols" / "cpu-add"
    sol_dir.mkdir(parents=True)
    (sol_dir / "solution.cpp").write_text(CPU_SOLUTION)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["grade", str(sol_dir.parent), "--source", str(cpu_problem_dir.parent), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(x) for x in (out / "graded.jsonl").read_text().splitlines()]
    assert record["verdict"]["passed"] is True


def test_grade_skips_and_reports_a_binary_file_and_grades_the_rest(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    sol_dir = tmp_path / "sols" / "cpu-add"
    sol_dir.mkdir(parents=True)
    (sol_dir / "solution.cpp").write_text(CPU_SOLUTION)
    (sol_dir / "a.out").write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x80 binary")
    out = tmp_path / "out"
    args = ["grade", str(sol_dir.parent), "--source", str(cpu_problem_dir.parent)]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 1, result.output  # as for a pack's bad line: the rest graded
    assert "Traceback" not in result.output and "skipped a.out: not UTF-8 text" in result.output
    (record,) = [json.loads(x) for x in (out / "graded.jsonl").read_text().splitlines()]
    assert record["verdict"]["passed"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["rejected_lines"]) == 1 and "a.out" in summary["rejected_lines"][0]


def test_grade_unknown_task_is_an_error(tmp_path: Path, cpu_problem_dir: Path) -> None:
    sols = write_solution_datapack(
        [Solution(task_id="nope", files=[SourceFile(path="a.cu", content="x")])],
        tmp_path / "s.tar.gz",
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["grade", str(sols), "--source", str(cpu_problem_dir.parent), "--out", str(out)]
    )
    assert result.exit_code == 2 and "nope" in result.output
    assert not out.exists()  # inputs are checked before anything is created


def test_grade_takes_the_good_lines_of_a_pack_and_names_the_bad_one(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    good = json.dumps(
        {"task_id": "cpu-add", "files": [{"path": "solution.cpp", "content": CPU_SOLUTION}]}
    )
    pack = tmp_path / "mixed.tar.gz"
    with tarfile.open(pack, "w:gz") as tar:
        for name, data in [
            ("metadata.json", b'{"release": "t"}'),
            ("solutions.jsonl", f"{good}\n{{not json\n\n{good}\n".encode()),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "out"
    res = runner.invoke(
        app, ["grade", str(pack), "--source", str(cpu_problem_dir.parent), "--out", str(out)]
    )
    assert res.exit_code == 1, res.output
    (bad,) = [line for line in res.output.splitlines() if line.startswith("rejected:")]
    assert "line 2 is not valid JSON" in bad and "solutions.jsonl:2" in bad
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 2 and summary["pass_at_k"]["pass@1"] == 1.0  # lines 1 and 4
    assert len(summary["rejected_lines"]) == 1 and "Traceback" not in res.output


def test_grade_regrades_infrastructure_failures_on_resume(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    out = tmp_path / "out"
    lost = Verdict(task_id="cpu-add", passed=None, failure="infrastructure", reason="host lost")
    ResultStore(out, "graded").append(
        {"key": "cpu-add#0", "task_id": "cpu-add", "group": "cuda-kernels", "sample": 0,
         "verdict": lost.model_dump(mode="json")}
    )  # fmt: skip
    args = ["grade", str(_solutions(tmp_path)), "--source", str(cpu_problem_dir.parent)]
    res = runner.invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    latest = {r["key"]: r for r in ResultStore(out, "graded").records()}
    assert latest["cpu-add#0"]["verdict"]["passed"] is True  # graded again, the last record wins
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 2 and summary["infrastructure_failures"] == 0


@pytest.mark.parametrize("signals", [1, 2])
def test_grade_ctrl_c_stops_cleanly_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signals: int
) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    suite = cpu_suite(tmp_path / "suite", 6)
    sols = tmp_path / "sols"
    for i in range(6):
        (sols / f"cpu-add-{i}").mkdir(parents=True)
        (sols / f"cpu-add-{i}" / "solution.cpp").write_text(CPU_SOLUTION)
    out = tmp_path / "out"
    cmd = [str(CUDAENV), "grade", str(sols), "--source", str(suite), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    while not (out / "graded.jsonl").exists() or not list(ResultStore(out, "graded").records()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    for _ in range(signals):
        os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "Traceback" not in stdout + stderr, stderr
    said = [line for line in (stdout + stderr).splitlines() if "interrupted" in line]
    assert len(said) == 1 and "gradings stored" in said[0]
    assert "KeyboardInterrupt" not in stdout + stderr  # said once, by that line
    stored = list(ResultStore(out, "graded").records())
    assert all(r["verdict"]["passed"] for r in stored) and 0 < len(stored) < 6
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["samples"] == len(stored)
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    final = list(ResultStore(out, "graded").records())
    assert len(final) == 6 and all(r["verdict"]["passed"] for r in final)


def test_validate_passes_good_and_fails_broken_suite(tmp_path: Path, cpu_problem_dir: Path) -> None:
    ok = runner.invoke(
        app, ["validate", str(cpu_problem_dir.parent), "--json", str(tmp_path / "v.json")]
    )
    assert ok.exit_code == 0, ok.output
    (row,) = json.loads((tmp_path / "v.json").read_text())
    assert row["ok"] and row["reference"] == "passed" and row["nop"].startswith("failed")
    broken = write_problem(
        tmp_path / "broken",
        "cpu-broken",
        spec={
            "build_command": "g++ -I include -o test.out solution.cpp test/test_main.cpp",
            "metadata": {"requires_gpu": False},
        },
        files={
            "context/include/add.h": "int add(int a, int b);\n",
            "test/test_main.cpp": '#include "add.h"\nint main(){ return add(2, 3) == 5 ? 0 : 1; }\n',
            "solution/solution.cpp": '#include "add.h"\nint add(int a, int b){ return a * b + 1; }\n',
        },
    )
    bad = runner.invoke(app, ["validate", str(broken.parent), "--json", str(tmp_path / "b.json")])
    assert bad.exit_code == 1
    (row,) = json.loads((tmp_path / "b.json").read_text())
    assert not row["ok"] and "reference fails its tests" in row["problem"]


def test_image_and_gpus_need_the_docker_sandbox(tmp_path: Path, cpu_problem_dir: Path) -> None:
    for cmd in (["validate", str(cpu_problem_dir.parent)], ["grade", str(tmp_path)]):
        result = runner.invoke(app, [*cmd, "--image", "some:image"])
        assert result.exit_code == 2 and "--sandbox docker only" in result.output


def test_an_unknown_sandbox_is_one_line_before_any_work(
    tmp_path: Path, cpu_problem_dir: Path
) -> None:
    """grade, validate and baseline name the backends, as eval does, and write nothing."""
    src = str(cpu_problem_dir.parent)
    out = tmp_path / "graded"
    for cmd in (
        ["grade", str(_solutions(tmp_path)), "--source", src, "--out", str(out)],
        ["validate", src],
        ["baseline", src],
    ):
        result = runner.invoke(app, [*cmd, "--sandbox", "nope"])
        assert result.exit_code == 2, result.output
        assert "unknown sandbox 'nope'; choose local or docker" in result.output
    assert not out.exists()


@pytest.mark.docker
def test_validate_in_a_chosen_image(tmp_path: Path, eval_cpu_image: str) -> None:
    """The gate runs in the image a cluster would use (here the CPU eval image, whose
    numba-cuda simulator runs a cuda_python problem fully)."""
    image = eval_cpu_image
    out = tmp_path / "v.json"
    args = ["validate", "builtin", "--ids", "py-vector-add", "--sandbox", "docker"]
    result = runner.invoke(app, [*args, "--image", image, "--json", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(out.read_text())
    assert row["ok"] and row["reference"] == "passed" and row["nop"].startswith("failed")
