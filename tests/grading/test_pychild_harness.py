"""The cuda_python harnesses not yet split (docs/AUTHORING.md) run the solution in a child
process (``test/pychild.py``): what the solution does to its own interpreter (patching numpy,
printing, reading its environment) never reaches the comparison, the completion token or the
harness's stdout, and the timed calls run inside ``bench_region`` in the child. Real harnesses
(py-relu-clip's) on numba-cuda's simulator."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem

pytest.importorskip("numba")

TOKEN = "tok-7f3a9c"


def _python_problems() -> list[Problem]:
    """The cuda_python problems on the child-process harness (split ones have none)."""
    return [p for p in load_suite("builtin") if p.problem_type == "cuda_python" and not p.split]


def _relu_clip() -> Problem:
    return load_suite("builtin")["py-relu-clip"]


# a relu_clip kernel, right (exact: comparisons and selections only) unless FLIP subtracts
RELU = """\
@cuda.jit
def _relu(x, lo, hi, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = 0.0 if v <= lo else min(v, hi) FLIP


def relu_clip(x, lo, hi, out):
    n = out.shape[0]
    if n:
        _relu[n // 256 - -1, 256](x, lo, hi, out)
"""
WRONG_RELU = RELU.replace("FLIP", "- 1.0")
# the numpy patches the red-team catalog tries on a wrong answer: a second name for numpy,
# and a utf-7 coding line hiding the patch from a text parse (no "+" outside the shift)
NUMPY_ALIAS_PATCH = (
    "import numpy as np\nfrom numba import cuda\n\n_m = np\n"
    "_m.array_equal = lambda *a, **k: True\n\n" + WRONG_RELU
)
CODING_UTF7 = (
    "# -*- coding: utf-7 -*-\nfrom numba import cuda\n\n"
    + WRONG_RELU
    + "# +AAo-import numpy as _n+AAo-_n.array_equal = lambda *a, **k: True\n"
)


def _run(problem: Problem, tmp: Path, solution: str, *args: str, **env: str):
    for f in problem.test_files:
        (tmp / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / f.path).write_text(f.content)
    (tmp / "solution.py").write_bytes(solution.encode())
    script = next(
        f.path for f in problem.test_files if f.path.endswith(".py") and "test_" in f.path
    )
    full = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "CUDAENV_COMPLETION_TOKEN": TOKEN, **env}
    return subprocess.run(
        [sys.executable, script, *args],
        cwd=tmp,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_python_harness_runs_the_solution_in_the_shared_child() -> None:
    problems = _python_problems()
    split = [p for p in load_suite("builtin") if p.problem_type == "cuda_python" and p.split]
    assert len(problems) + len(split) == 8 and problems
    helpers = {
        p.task_id: {f.path: f.content for f in p.test_files}["test/pychild.py"] for p in problems
    }
    assert len(set(helpers.values())) == 1  # one helper: the group's shared test/pychild.py
    for p in problems:
        harness = next(f for f in p.test_files if f.path != "test/pychild.py")
        imported = {
            a.name.split(".")[0]
            for n in ast.walk(ast.parse(harness.content))
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])
        }
        # the parent never imports solution code, numba or anything that starts CUDA
        assert imported <= {"sys", "numpy", "pychild"}, (p.task_id, imported)


@pytest.mark.parametrize("source", [NUMPY_ALIAS_PATCH, CODING_UTF7], ids=["alias", "utf7"])
def test_a_numpy_patch_in_the_solution_does_not_reach_the_comparison(
    tmp_path: Path, source: str
) -> None:
    (tmp_path / "solution.py").write_bytes(source.encode())
    probe = "import solution, numpy; print(numpy.array_equal([1], [2]))"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    inproc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert inproc.stdout.strip() == "True"  # in one process the patch turns every check into a yes
    ran = _run(_relu_clip(), tmp_path, source)
    assert ran.returncode == 1 and "wrong, first out[" in ran.stdout
    assert "CUDAENV_COMPLETE" not in ran.stdout


SPY = """\
import os
import numpy as np
from numba import cuda

print("timing: 0.001 ms")
print("child token=" + repr(os.environ.get("CUDAENV_COMPLETION_TOKEN")))
try:  # /proc shows the harness's original environment block, not its current environment
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        print("parent environ has token=" + str(b"tok-7f3a9c" in f.read()))
except OSError as exc:
    print("parent environ unreadable: " + type(exc).__name__)


""" + RELU.replace("FLIP", "")


def test_the_child_sees_no_token_and_cannot_print_to_the_harness_stdout(tmp_path: Path) -> None:
    ran = _run(_relu_clip(), tmp_path, SPY)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[-1] == f"CUDAENV_COMPLETE {TOKEN}"
    assert "timing:" not in ran.stdout and "timing: 0.001 ms" in ran.stderr
    assert "child token=None" in ran.stderr
    # overwritten in place (and, without CAP_SYS_PTRACE, not even readable: non-dumpable)
    assert "parent environ has token=False" in ran.stderr or "unreadable" in ran.stderr
    assert "parent environ has token=True" not in ran.stderr


def test_a_completion_line_from_the_solution_fails_the_run_and_is_marked(tmp_path: Path) -> None:
    forged = SPY.replace('print("timing: 0.001 ms")', 'print("CUDAENV_" + "COMPLETE abc")')
    ran = _run(_relu_clip(), tmp_path, forged)
    assert ran.returncode == 1
    lines = ran.stdout.splitlines()
    # the grader sees a token it never issued (a forged line) and not the real one
    assert "CUDAENV_COMPLETE solution-printed-a-completion-line" in lines
    assert f"CUDAENV_COMPLETE {TOKEN}" not in lines and "abc" not in ran.stdout


FAKE_NVTX = """\
import contextlib, os

LOG = os.environ["SPY_LOG"]


@contextlib.contextmanager
def annotate(name):
    with open(LOG, "a") as f:
        f.write(f"enter {name} {os.getppid()}\\n")
    yield
    with open(LOG, "a") as f:
        f.write(f"exit {name} {os.getppid()}\\n")
"""

LOGGING_RELU = """\
import os
from numba import cuda


@cuda.jit
def _relu(x, lo, hi, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = 0.0 if v <= lo else min(v, hi)


def relu_clip(x, lo, hi, out):
    with open(os.environ["SPY_LOG"], "a") as f:
        f.write(f"call {os.getppid()}\\n")
    n = out.shape[0]
    if n:
        _relu[n // 256 + 1, 256](x, lo, hi, out)
"""


def test_the_benchmark_times_the_solution_calls_inside_bench_region_in_the_child(
    tmp_path: Path,
) -> None:
    # an nvtx stand-in that logs its ranges (the real one needs a profiler to be observed)
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "nvtx.py").write_text(FAKE_NVTX)
    log = tmp_path / "events.log"
    work = tmp_path / "work"
    work.mkdir()
    ran = _run(
        _relu_clip(),
        work,
        LOGGING_RELU,
        "--perf",
        SPY_LOG=str(log),
        PYTHONPATH=str(tmp_path / "fake"),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    events = log.read_text().split("\n")[:-1]
    kinds = [e.split()[0] for e in events]
    parents = {e.split()[-1] for e in events}  # each event's parent process
    # 3 warm-up calls, then the 2 timed simulator calls inside one range, all in one child
    assert kinds == ["call"] * 3 + ["enter", "call", "call", "exit"]
    # one process, whose parent is the harness (not this test): the child, never the harness
    assert len(parents) == 1 and str(os.getpid()) not in parents
