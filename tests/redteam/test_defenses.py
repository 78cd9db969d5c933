"""The defenses the red team forced, without false positives on honest solutions."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.env.core import CudaEnv
from cudaenv.grading.stages import TOKEN_ENV, completion_forgeries
from cudaenv.grading.static_checks import analyse
from cudaenv.grading.timing import measure
from cudaenv.grading.workspace import assemble
from cudaenv.problems import load_suite
from cudaenv.problems.model import SourceFile
from cudaenv.redteam.fixtures import fixture_suite
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import write_problem

SUITE = load_suite("builtin")


def _oracle_reward(problem, mode: str = "solve") -> tuple[float, object]:
    """Play the reference through the env like an honest agent: write its files, submit."""
    env = CudaEnv(problem, mode=mode, max_steps=len(problem.solution.files) + 2)
    try:
        env.reset()
        for f in problem.solution.files:
            env.step({"tool": "write_file", "args": {"path": f.path, "content": f.content}})
        _, reward, _, _, info = env.step({"tool": "submit", "args": {}})
    finally:
        env.close()
    return reward, info["verdict"]


@pytest.mark.parametrize("problem", list(SUITE), ids=lambda p: p.task_id)
def test_references_and_baselines_pass_static_checks(problem) -> None:
    """No false positive: every bundled reference (and baseline) is clean and nothing dropped."""
    for sol, refs in (
        (problem.solution, problem.source_references),
        (problem.baseline_solution, None),
    ):
        if sol is None:
            continue
        report = analyse(sol.files, refs)
        assert not report.violations, report.violations
        gathered = assemble(problem, sol)
        assert not gathered.suspicious and not gathered.dropped, gathered.suspicious


@pytest.mark.parametrize(
    "problem", list(SUITE.filter(problem_type="cuda_python")), ids=lambda p: p.task_id
)
def test_cuda_python_references_score_through_the_env(problem) -> None:
    reward, verdict = _oracle_reward(problem)
    assert reward == 1.0 and not verdict.suspected_hack, verdict.model_dump_json(indent=1)


@pytest.mark.parametrize("task_id", ["cpu-add", "cpu-canary"])
def test_fixture_references_score(task_id: str) -> None:
    """The red team's CPU fixtures are solvable: their exploits' zeros mean something."""
    reward, verdict = _oracle_reward(fixture_suite().problem(task_id))
    assert reward == 1.0 and not verdict.suspected_hack, verdict.model_dump_json(indent=1)


HONEST_CPP = """#include <cstdio>
#include <cstdlib>
#include "kernels.cuh"
#define CUDA_CHECK(x) do { if ((x) != 0) { fprintf(stderr, "err\\n"); exit(EXIT_FAILURE); } } while (0)
__device__ unsigned lane() { unsigned l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
void fail() { std::exit(1); _exit(2); }
struct Obj { void exit() {} };
void g(Obj o) { o.exit(); }
"""
HONEST_PY = """import math
from functools import lru_cache

import numba
import numpy as np
from numba import cuda, float32

SIM = numba.config.ENABLE_CUDASIM


class Buffers:
    def __init__(self, n):
        self.n = n


def run(a, out):
    tmp = np.empty_like(out)
    tmp[0] = math.sqrt(2.0)
    out[:] = tmp
"""


def test_honest_idioms_are_not_flagged() -> None:
    files = [
        SourceFile(path="solution.cu", content=HONEST_CPP),
        SourceFile(path="kernels.cuh", content="#pragma once\n"),
        SourceFile(path="solution.py", content=HONEST_PY),
    ]
    assert analyse(files, None).violations == []


@pytest.mark.parametrize(
    ("path", "content", "needle"),
    [
        ("s.cpp", "int f() { exit(0); }", "exit(0)"),
        ("s.cpp", "int f(int c) { _exit(c); }", "_exit(c)"),
        ("s.cpp", "void (*q)(int) = quick_exit;", "used as a value"),
        ("s.cpp", '#define H "test/t.cpp"\n#include H\n', "computed #include"),
        ("s.cpp", '#include "../x.cpp"\n', "outside the workspace"),
        ("s.cpp", '#include "payload.txt"\n', "non-source file"),
        ("s.cpp", "#include_next <cstring>\n", "include_next"),
        ("s.cpp", "#define if(c) if (0)\n", "redefines a keyword"),
        ("s.cpp", "extern char** __environ;", "__environ"),
        ("s.cpp", '__attribute__((section(".init_array"))) void (*h)() = 0;', "section"),
        ("s.cpp", "[[gnu::constructor]] void h() {}", "section/constructor"),
        ("s.cu", 'void f() { asm(".incbin \\"test/t.cpp\\""); }', ".incbin"),
        ("s.py", "import numpy as np\nnp.array_equal = None\n", "monkeypatching"),
        ("s.py", "from numpy import testing as t\nt.x = 1\n", "monkeypatching"),
        ("s.py", "def f(out):\n    out.copy_to_host = None\n", "argument's attributes"),
        ("s.py", "import operator\n", "not an allowed module"),
        ("s.py", "import __main__\n", "not an allowed module"),
        ("s.py", "import linecache\n", "not an allowed module"),
        ("s.py", "raise SystemExit\n", "SystemExit"),
        ("s.py", "import numpy as np\nnp.fromfile('x')\n", "fromfile"),
        ("s.py", "import numba\nx = numba.core.config.os\n", "'os'"),
        (
            "s.py",
            "import numba\nmatch numba:\n    case object(core=object(config=object(os=m))):\n        pass\n",
            "match pattern",
        ),
    ],
)
def test_exploit_constructs_are_flagged(path: str, content: str, needle: str) -> None:
    violations = analyse([SourceFile(path=path, content=content)], None).violations
    assert any(needle in v for v in violations), violations


def test_completion_forgeries() -> None:
    tok = "ab" * 16
    assert completion_forgeries(f"ok\nCUDAENV_COMPLETE {tok}\n", tok) == []
    assert (
        "forged" in completion_forgeries(f"CUDAENV_COMPLETE 00\nCUDAENV_COMPLETE {tok}\n", tok)[0]
    )
    assert (
        "2 times"
        in completion_forgeries(f"CUDAENV_COMPLETE {tok}\nCUDAENV_COMPLETE {tok}\n", tok)[0]
    )


@pytest.mark.parametrize(
    ("solution", "expected_ms", "suspected"),
    [("true", 0.5, False), ("echo COMPUTE_EVAL_TIME_MS: 0.001", None, True)],
)
def test_custom_timing_ignores_solution_lines(
    tmp_path: Path, solution: str, expected_ms, suspected
) -> None:
    """speed: a time line printed by the solution (after the harness's) never becomes the time."""
    d = write_problem(
        tmp_path,
        "custom",
        spec={
            "build_command": None,
            "test_command": "true",
            "timing_mode": {"type": "custom"},
            "benchmark_command": "echo COMPUTE_EVAL_TIME_MS: 0.5; echo CUDAENV_COMPLETE $CUDAENV_COMPLETION_TOKEN; bash solution.sh",
            "metadata": {"requires_gpu": False},
        },
        files={"test/readme.txt": "x"},
    )
    problem = load_suite(d)["custom"]
    tok = "cd" * 16
    with LocalSandbox() as box:
        box.write_file("solution.sh", solution)
        m = measure(box, problem, env={TOKEN_ENV: tok}, timeout=20, token=tok)
    assert m.ms == expected_ms and bool(m.suspected) is suspected


def test_workspace_drops_shadowing_and_result_files() -> None:
    problem = fixture_suite().problem("cpu-add")
    files = {
        "solution.cpp": "int add(int a, int b) { return a + b; }\n",
        "include/cstring": "#define if(x) if(0)\n",
        "include/helpers.h": "int helper();\n",
        "reward.json": "{}",
        "notes.md": "my notes",
    }
    g = assemble(problem, files)
    assert sorted(g.dropped) == ["include/cstring", "include/helpers.h", "reward.json"]
    assert [f.path for f in g.solution] == ["solution.cpp"]
    assert g.unused == ["notes.md"]  # not reachable from the build: left out, not flagged
    assert len(g.suspicious) == 3


def test_agent_sandbox_is_closed_before_grading() -> None:
    """escape: nothing the agent started is alive while its solution is graded."""
    from cudaenv.grading.request import GradeRequest, grade_here

    problem = fixture_suite().problem("cpu-add")
    seen = {}

    def grader(request: GradeRequest):
        seen["agent_sandbox"] = env._sandbox
        return grade_here(request)

    env = CudaEnv(problem, grader=grader)
    try:
        env.reset()
        env.step({"tool": "bash", "args": {"command": "sleep 300 & echo started"}})
        env.step({"tool": "submit", "args": {}})
    finally:
        env.close()
    assert "agent_sandbox" in seen and seen["agent_sandbox"] is None


def test_completion_proof_still_required_behind_the_static_layer() -> None:
    """The completion token stays a layer of its own: exit 0 without it fails the stage."""
    from cudaenv.grading.stages import run_stage

    tok = "ef" * 16
    with LocalSandbox() as box:
        early, _ = run_stage(box, "exit 0", timeout=10, env={TOKEN_ENV: tok}, token=tok)
        honest, _ = run_stage(box, f"echo CUDAENV_COMPLETE {tok}", timeout=10, env={}, token=tok)
    assert early.status == "failed" and "completion" in (early.reason or "")
    assert honest.status == "ok"
