"""The release gate of one generated problem, shared by the CI sample and the slow whole-set
test: the grader's validate (reference and baseline build and, where this machine can run
them, pass; the NOP fails) and, for numba problems, every mutant really run and rejected by the
checker. cuda_cpp problems the grader does not validate are compiled with nvcc directly (one
nvcc for the runner, the reference and the baseline; the NOP, the runner alone, must not
link). The grader's validate grades a generated problem's mutants itself where its tests run
(numba: on the simulator)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from cudaenv.families import mutants
from cudaenv.grading.release_gate import validate_problem
from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def compile_directly(problem: Problem, workdir: Path) -> None:
    """nvcc the runner, the reference and the baseline as the build command would (same
    flags), link both solutions, and check that the runner without a solution does not."""
    assert shutil.which("nvcc"), "nvcc is not installed"
    _write(workdir, {f.path: f.content for f in problem.context_files + problem.test_files})
    assert problem.solution and problem.baseline_solution
    (ref,) = problem.solution.files
    (base,) = problem.baseline_solution.files
    _write(workdir, {"ref.cu": ref.content, "base.cu": base.content})
    (workdir / "obj").mkdir()
    argv = shlex.split(problem.build_command or "")
    flags = [a for a in argv[1:] if a.startswith(("-I", "-O")) or a == "include"]
    harness = [f.path for f in problem.test_files if f.path.endswith((".cu", ".cpp"))]
    subprocess.run(
        ["nvcc", *flags, "-c", "ref.cu", "base.cu", *harness, "-odir", "obj"],
        cwd=workdir, check=True, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    objs = [f"obj/{Path(h).stem}.o" for h in harness]
    for name in ("ref", "base"):
        subprocess.run(
            ["nvcc", "-o", f"{name}.out", f"obj/{name}.o", *objs],
            cwd=workdir, check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    nop = subprocess.run(
        ["nvcc", "-o", "nop.out", *objs], cwd=workdir, capture_output=True, text=True
    )
    assert nop.returncode != 0, "the runner links without a solution"


def gate(problem: Problem, workdir: Path, *, grader: bool) -> None:
    """Assert the gate for ``problem``; ``grader=False`` compiles cuda_cpp problems directly."""
    if problem.problem_type == "cuda_cpp" and not grader:
        compile_directly(problem, workdir)
        return
    row = validate_problem(problem)
    assert row.ok, (problem.task_id, row.problem, row.reference, row.nop, row.baseline)
    ref = row.verdicts["reference"]
    assert ref.compiled and row.verdicts["baseline"].compiled
    if problem.problem_type == "cuda_python":
        # validate also grades every deterministic mutant where the tests run (a passing one
        # is an issue, so row.ok above covers them); check they are there to be graded
        assert ref.passed and row.verdicts["baseline"].passed, problem.task_id
        assert len([m for m in mutants(problem) if m.deterministic]) >= 3
    else:
        assert ref.passed is not False and row.verdicts["nop"].passed is False


def check_emulated(problem: Problem, workdir: Path) -> None:
    """The reference and the baseline pass their checker on the CPU (tests/families/cuemu: the
    checker draws the inputs, the runner built with the solution writes the outputs, the
    checker decides); every deterministic mutant fails it, rejected by the checker."""
    files = {f.path: f.content for f in problem.context_files + problem.test_files}
    runners = [f.path for f in problem.test_files if f.path.endswith((".cu", ".cpp"))]
    sources = ["solution.cu", *runners]
    checked = emulate.Checked(problem, workdir / "check")
    assert problem.solution and problem.baseline_solution
    runs = [("reference", problem.solution.files), ("baseline", problem.baseline_solution.files)]
    for name, sol in runs:
        binary = emulate.build(
            {**files, **{f.path: f.content for f in sol}}, workdir / name, sources=sources
        )
        run = checked.run(binary)
        assert run.passed, (problem.task_id, name, run.output[-2000:], run.report)
    for m in mutants(problem):
        if not m.deterministic:
            continue
        binary = emulate.build({**files, **m.files}, workdir / m.name, sources=sources)
        run = checked.run(binary)
        assert run.rc == 0 and run.report["failures"], (problem.task_id, m.name, run.output[-800:])
        assert not run.passed
