"""The cuda_python runner (``envs/_shared/test/cudaenv_pyrunner.py``) with real adapters
(py-relu-clip's) on numba-cuda's simulator: what used to need a child process now needs none.

The solution is imported into the runner's process, and whatever it does to that process
(patching numpy, printing a completion line) cannot reach the verdict: the checker decides in
a process of its own on the files the runner wrote. Each call of the solution sits in an NVTX
``cudaenv_call`` range and the timed calls in one ``bench_region``, in the runner's process
(watched here through a stand-in ``nvtx`` module that logs its ranges); the inputs the solution
gets are the checker's, fresh per seed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

import cudaenv
from cudaenv.problems import load_suite
from cudaenv.problems.model import SourceFile
from tests.grading.split_answers import Checked, run_python

pytest.importorskip("numba")

PROBLEM = load_suite("builtin")["py-relu-clip"]
SEED = 31_337
SIM = {"NUMBA_ENABLE_CUDASIM": "1"}

# a relu_clip kernel, right (comparisons and selections only) unless FLIP subtracts
RELU = """\
from numba import cuda


@cuda.jit
def _relu(x, lo, hi, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = 0.0 if v <= lo else min(v, hi) FLIP


def relu_clip(x, lo, hi, out):
    LOG
    n = out.shape[0]
    if n:
        _relu[n // 256 + 1, 256](x, lo, hi, out)
"""


def relu(flip: str = "", log: str = "pass", prefix: str = "") -> list[SourceFile]:
    text = prefix + RELU.replace("FLIP", flip).replace("LOG", log)
    return [SourceFile(path="solution.py", content=text)]


# numpy patched through a second name: in one process with the old harnesses every
# comparison said yes
PATCH = "import numpy as np\n_m = np\n_m.array_equal = lambda *a, **k: True\n"


@pytest.mark.slow
def test_a_numpy_patch_in_the_solution_does_not_reach_the_verdict(tmp_path: Path) -> None:
    run = Checked(PROBLEM, tmp_path / "checker", SEED, env=SIM)
    ran, report = run_python(PROBLEM, relu("- 1.0", prefix=PATCH), run, tmp_path / "wrong")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert not report["passed"] and any("host_out: " in f for f in report["failures"]), report
    ran, report = run_python(PROBLEM, relu(prefix=PATCH), run, tmp_path / "right")
    assert ran.returncode == 0 and report["passed"], report  # the patch changes nothing


@pytest.mark.slow
def test_a_completion_line_from_the_solution_is_flagged_and_decides_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    # spelled at run time: the static rules refuse the word in the source
    line = 'print(bytes([67, 85, 68, 65, 69, 78, 86, 95]).decode() + "COMPLETE abc")'
    right = cudaenv.grade(PROBLEM, {"solution.py": relu(log=line)[0].content}, test_cache=False)
    assert any("forged" in s for s in right.suspected_hack), right  # reward 0 whatever passed
    wrong = cudaenv.grade(PROBLEM, {"solution.py": relu("- 1.0", line)[0].content})
    assert wrong.passed is False and "wrong outputs" in (wrong.reason or ""), wrong.reason


FAKE_NVTX = """\
import contextlib, os


@contextlib.contextmanager
def annotate(name):
    with open(os.environ["SPY_LOG"], "a") as f:
        f.write(f"enter {name} {os.getpid()}\\n")
    yield
    with open(os.environ["SPY_LOG"], "a") as f:
        f.write(f"exit {name} {os.getpid()}\\n")
"""
CALL_LOG = """\
    import hashlib, numpy, os
    host = x.copy_to_host() if hasattr(x, "copy_to_host") else numpy.asarray(x)
    with open(os.environ["SPY_LOG"], "a") as f:
        f.write(f"call {os.getpid()} {out.shape[0]} {hashlib.sha256(host.tobytes()).hexdigest()}\\n")
"""


def _spied(tmp_path: Path, stage: str, seed: int = SEED) -> tuple[list[list[str]], Checked]:
    """The events of a run of the logging solution (ranges and calls), and its run."""
    (tmp_path / "fake").mkdir(parents=True)
    (tmp_path / "fake" / "nvtx.py").write_text(FAKE_NVTX)
    log = tmp_path / "events.log"
    run = Checked(PROBLEM, tmp_path / "checker", seed, stage=stage, env=SIM)
    env = {"SPY_LOG": str(log), "PYTHONPATH": str(tmp_path / "fake")}
    ran, report = run_python(PROBLEM, relu(log=CALL_LOG.strip()), run, tmp_path / "work", env)
    assert ran.returncode == 0 and report["passed"], ran.stderr[-2000:] + str(report)
    return [line.split() for line in log.read_text().splitlines()], run


@pytest.mark.slow
def test_each_call_with_work_is_in_a_call_range_in_the_runners_process(tmp_path: Path) -> None:
    events, run = _spied(tmp_path, "test")
    assert len({e[1] if e[0] == "call" else e[2] for e in events}) == 1  # one process
    inside, depth, calls = [], 0, 0
    for e in events:
        if e[0] in ("enter", "exit"):
            assert e[1] == "cudaenv_call"
            depth += 1 if e[0] == "enter" else -1
        else:
            calls += 1
            inside.append((int(e[2]) > 0, depth == 1))
    assert calls == 2 * len(run.inputs)  # a host and a device call per case
    assert all(has_work == ranged for has_work, ranged in inside)  # n = 0: no range


@pytest.mark.slow
def test_the_timed_calls_run_inside_bench_region_on_the_checkers_inputs(tmp_path: Path) -> None:
    events, run = _spied(tmp_path / "a", "perf")
    (perf,) = run.inputs.values()
    kinds = [e[0] if e[0] == "call" else f"{e[0]} {e[1]}" for e in events]
    iters = int(perf["iters"])
    # 3 warm-up calls, then the timed calls inside one range
    assert kinds == ["call"] * 3 + ["enter bench_region"] + ["call"] * iters + ["exit bench_region"]
    seen = {e[3] for e in events if e[0] == "call"}
    assert seen == {hashlib.sha256(np.ascontiguousarray(perf["x"]).tobytes()).hexdigest()}
    other, _ = _spied(tmp_path / "b", "perf", SEED + 1)
    assert {e[3] for e in other if e[0] == "call"}.isdisjoint(seen)  # fresh per seed


def test_the_runner_needs_no_child_and_imports_the_adapter_and_the_solution() -> None:
    runner = {f.path: f.content for f in PROBLEM.test_files}["test/cudaenv_pyrunner.py"]
    assert "subprocess" not in runner and "multiprocessing" not in runner
    assert 'importlib.import_module("run")' in runner
    assert os.path.basename(PROBLEM.test_command.split()[1]) == "cudaenv_pyrunner.py"
