"""Whose fault a failure is, with real processes and signals (see cudaenv.grading.faults).

An outside ``kill -9`` of the test process (an operator, the host's OOM killer) is not the
agent's failure and is never cached; a harness interpreter missing from PATH is not either;
a venv's own ``bin/cudaenv`` grades cuda_python problems without the venv activated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import cudaenv
from cudaenv.problems import Problem, load_suite
from tests.conftest import write_problem

MARK = "599.137"  # a unique argument: the test process the killer looks for
RLIMITS = {"isolation": "rlimits"}


def _problem(
    tmp_path: Path,
    run_sh: str,
    *,
    test_command: str = "bash test/run.sh",
    files: dict[str, str] | None = None,
) -> Problem:
    d = write_problem(
        tmp_path / "suite",
        "faults",
        spec={
            "build_command": None,
            "test_command": test_command,
            "timeout_seconds": 300,
            "metadata": {"requires_gpu": False},
        },
        files={"test/run.sh": run_sh, **(files or {})},
    )
    return load_suite(d)["faults"]


class Killer(threading.Thread):
    """SIGKILLs, from outside the sandbox, up to ``times`` processes running ``sleep MARK``."""

    def __init__(self, times: int) -> None:
        super().__init__(daemon=True)
        self.times, self.killed, self.done = times, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and self.killed < self.times:
            for pid in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if argv[:2] == [b"sleep", MARK.encode()]:
                    os.kill(int(pid), signal.SIGKILL)
                    self.killed += 1
            self.done.wait(0.05)


def _grade_under_killer(problem: Problem, times: int) -> tuple[cudaenv.Verdict, int]:
    killer = Killer(times)
    killer.start()
    try:
        verdict = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox_options=RLIMITS)
    finally:
        killer.done.set()
        killer.join()
    return verdict, killer.killed


def _cached_outcomes() -> list[str]:
    root = Path(os.environ["CUDAENV_CACHE_DIR"]) / "tests"
    return sorted(p.name for p in root.glob("*.json")) if root.is_dir() else []


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def test_an_outside_kill_is_run_again_and_nothing_is_lost(tmp_path: Path) -> None:
    """kill -9 from outside during the test run: the retry's outcome stands (here a pass).
    The attempt is told by a file outside the workspace (rlimits isolation shares the host's
    temp dir): the workspace itself is re-laid before the retry."""
    ran = tmp_path / "ran"
    run_sh = f"if [ -e {ran} ]; then echo ok; exit 0; fi\ntouch {ran}\nexec sleep {MARK}\n"
    verdict, killed = _grade_under_killer(_problem(tmp_path, run_sh), times=1)
    assert killed == 1
    assert verdict.passed is True and verdict.failure is None, verdict
    assert verdict.stages["test"].exit_code == 0


def test_the_retry_after_an_outside_kill_starts_from_a_re_laid_workspace(tmp_path: Path) -> None:
    """A run that rewrites the harness and then has itself killed (it looks like an outside
    kill) must not get a retry that runs the rewrite: the workspace is re-laid from the build
    first, the rewrite is flagged, and the stage fails. Without the re-lay the retry ran the
    rewritten test/run.sh, which puts the original back and passes (so the check after the
    retry found nothing either)."""
    run_sh = (
        "cp test/run.sh .orig.sh\n"
        "printf 'mv .orig.sh test/run.sh; echo all checks passed; exit 0\\n' > .new.sh\n"
        "mv .new.sh test/run.sh\n"  # a new file: the running bash keeps reading the old one
        f"exec sleep {MARK}\n"
    )
    verdict, killed = _grade_under_killer(_problem(tmp_path, run_sh), times=1)
    assert killed == 1
    assert verdict.passed is False and verdict.failure == "agent", verdict
    assert any("test/run.sh" in s for s in verdict.suspected_hack), verdict.suspected_hack
    assert "tampering" in verdict.reason


def test_outside_kills_are_infrastructure_and_never_cached(tmp_path: Path) -> None:
    problem = _problem(tmp_path, f"exec sleep {MARK}\n")
    verdict, killed = _grade_under_killer(problem, times=2)
    assert killed == 2
    assert verdict.failure == "infrastructure" and verdict.passed is None, verdict
    assert "SIGKILL" in verdict.reason
    assert _cached_outcomes() == []


def test_a_solution_that_crashes_itself_is_the_agents_and_not_cached(tmp_path: Path) -> None:
    crash = 'exec python3 -c "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"\n'
    verdict = cudaenv.grade(
        _problem(tmp_path, crash), {"solution.sh": "true\n"}, sandbox_options=RLIMITS
    )
    assert verdict.failure == "agent" and verdict.stages["test"].exit_code == 128 + 11, verdict
    assert _cached_outcomes() == []


def test_a_clean_failure_is_still_cached(tmp_path: Path) -> None:
    """The control for the two above: an ordinary exit code is cached as before."""
    problem = _problem(tmp_path, "exit 3\n")
    first = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox_options=RLIMITS)
    again = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox_options=RLIMITS)
    assert first.failure == "agent" and len(_cached_outcomes()) == 1
    assert again.stages["test"].cached is True


HOG = """\
import os, signal
kids = []
for _ in range(4):  # together over the sandbox's 100 MB; each alone under RLIMIT_DATA
    pid = os.fork()
    if pid == 0:
        x = bytearray(40 << 20)
        for i in range(0, len(x), 4096):
            x[i] = 1
        signal.pause()
    kids.append(pid)
for _ in kids:  # the harness dies the way its first dead worker died
    _, status = os.wait()
    if os.WIFSIGNALED(status):
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        os.kill(os.getpid(), os.WTERMSIG(status))
"""


def test_a_kill_by_the_sandboxs_memory_limit_is_the_agents(tmp_path: Path) -> None:
    """SIGKILL by the sandbox's own memory cgroup: the grader's limit, so the agent's failure."""
    from cudaenv.sandbox.base import SandboxLimits
    from cudaenv.sandbox.local import LocalSandbox

    with LocalSandbox(isolation="rlimits") as probe:
        probe.exec("true", timeout=30)
        if probe.limit_kills() is None:
            pytest.skip("no writable memory cgroup here: the sandbox cannot report OOM kills")
    opts = {**RLIMITS, "limits": SandboxLimits(memory_mb=100)}
    # the harness stands in for a solution that allocates too much (static checks keep
    # ``import os`` out of solutions)
    problem = _problem(tmp_path, "exec python3 test/hog.py\n", files={"test/hog.py": HOG})
    verdict = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox_options=opts)
    assert verdict.failure == "agent", verdict
    assert "memory limit" in (verdict.stages["test"].reason or ""), verdict
    assert _cached_outcomes() == []


def test_a_missing_harness_interpreter_is_infrastructure(tmp_path: Path) -> None:
    problem = _problem(tmp_path, "true\n", test_command="no-such-python-9 test/run.sh")
    verdict = cudaenv.grade(problem, {"solution.sh": "true\n"}, sandbox_options=RLIMITS)
    assert verdict.failure == "infrastructure", verdict
    assert "no-such-python-9 not found" in verdict.reason


def test_a_solution_exiting_127_is_the_agents(tmp_path: Path) -> None:
    """Exit 127 alone is not enough: the harness's programs are all found, so it is the agent's."""
    problem = _problem(tmp_path, "bash solution.sh\n")
    verdict = cudaenv.grade(problem, {"solution.sh": "no-such-tool-9\n"}, sandbox_options=RLIMITS)
    assert verdict.failure == "agent" and verdict.stages["test"].exit_code == 127, verdict


def test_a_venvs_cudaenv_grades_cuda_python_without_the_venv_on_path(tmp_path: Path) -> None:
    """``venv/bin/cudaenv`` run with PATH=/usr/bin:/bin: the harness's ``python`` is the venv's."""
    exe = Path(sys.executable).parent / "cudaenv"
    if not exe.exists():
        pytest.skip(f"no cudaenv script beside {sys.executable}")
    rows = tmp_path / "rows.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CUDAENV_CACHE_DIR": str(tmp_path / "cache"),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    cmd = [str(exe), "validate", "builtin", "--ids", "py-relu-clip", "--json", str(rows)]
    proc = subprocess.run(
        [*cmd, "-w", "1"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = json.loads(rows.read_text())
    assert row["reference"] == "passed" and row["ok"] is True, row
