"""Each stage after the build runs from pristine artifacts with nothing of the solution alive
(cudaenv.grading.pristine), a new completion secret per run, and timings from the grader's
clock only. Every command runs for real in local sandboxes; a stage's tampering comes from the
problem's own command where a solution that slipped past the static checks would do it (the
red-team catalog_stages plays the same attacks from real solutions). Only the durations of
timed runs are scripted; no test here asserts a duration.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading.pristine import Snapshot, settle
from cudaenv.grading.stages import BENCH_SEED_ENV, TOKEN_ENV
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem
from cudaenv.sandbox.base import ExecResult, Sandbox
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import CPU_SOLUTION
from tests.grading.local_box import LocalBox
from tests.grading.test_benchmark_cpu import _killed, _live_pids, cpu_problem

ROLES = ("solution", "baseline")


class Watched(LocalBox):
    """A real local sandbox that reports each exec (before and after) and each kill to a hook,
    forwards ``stray_processes``, and reports scripted durations for the timed runs."""

    def __init__(self, role: str, boxes: Boxes) -> None:
        super().__init__()
        self.role, self.boxes = role, boxes

    def before(self, command: str, env: Mapping[str, str]) -> None:
        self.boxes.hook("before", self, command, env)

    def after(self, command: str, env: Mapping[str, str], res: ExecResult) -> ExecResult:
        self.boxes.hook("after", self, command, env)
        if command == self.boxes.problem.benchmark_command and self.boxes.ms is not None:
            res = res.model_copy(update={"duration_s": self.boxes.ms / 1000.0})
        return res

    def killed(self) -> None:
        self.boxes.hook("killed", self, "", {})

    def stray_processes(self) -> list[int] | None:
        return self.inner.stray_processes()

    def sha(self, path: str) -> str:
        return hashlib.sha256(self.inner.read_file(path)).hexdigest()


Hook = Callable[[str, Watched, str, Mapping[str, str]], None]


class Boxes:
    """The sandbox factory for ``grade``: the solution's box first, then the baseline's."""

    def __init__(self, problem: Problem, hook: Hook | None = None, ms: float | None = 5.0):
        self.problem, self.ms = problem, ms
        self._hook = hook
        self.made: list[Watched] = []

    def hook(self, when: str, box: Watched, command: str, env: Mapping[str, str]) -> None:
        if self._hook is not None:
            self._hook(when, box, command, env)

    def __call__(self) -> Sandbox:
        box = Watched(ROLES[min(len(self.made), 1)], self)
        self.made.append(box)
        return box


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def _grade(problem: Problem, boxes: Boxes, solution: str = CPU_SOLUTION) -> Verdict:
    return cudaenv.grade(
        problem, {"solution.cpp": solution}, sandbox=boxes, mode="optimize", rounds=2
    )


def test_settle_kills_leftovers_and_relays_the_build(tmp_path: Path) -> None:
    """What a run leaves (a rewritten binary, a deleted harness file, an extra module, a link,
    a setsid process) is undone: the files' hashes are the build's again, the rest is gone,
    and the process is dead before settle returns."""
    name = f"cudaenv-stray-{uuid.uuid4().hex[:12]}"
    with LocalSandbox() as box:
        box.write_file("test.out", b"\x7fELF the build's binary")
        box.write_file("test/harness.py", "print('harness')\n")
        box.write_file("__pycache__/solution.cpython-311.pyc", b"bytecode")  # a cache, not kept
        box.exec("chmod +x test.out", timeout=30)
        snap = Snapshot.take(box, inputs={"test/harness.py"})
        box.exec(
            "printf '#!/bin/sh\\necho fake\\n' > test.out; rm test/harness.py; "
            "echo recompiled > __pycache__/solution.cpython-311.pyc; "
            "echo 'x = 1' > numpy.py; ln -s /etc/passwd link; "
            f"(setsid bash -c 'exec -a {name} sleep 100000' >/dev/null 2>&1 &)",
            timeout=30,
        )
        end = time.monotonic() + 60  # a hang guard while the subshell execs sleep
        while not (pids := _live_pids(name)) and time.monotonic() < end:
            time.sleep(0.01)
        assert len(pids) == 1
        try:
            found = settle(box, snap, "test run")
            assert all(_killed(p, name) for p in pids)
        finally:
            for pid in _live_pids(name):
                os.kill(pid, signal.SIGKILL)
        assert any("1 process(es) outlived the solution's test run" in f for f in found), found
        assert any("rewrote test.out, test/harness.py" in f for f in found), found
        assert len(found) == 2  # an honest import's rewritten bytecode is no finding
        assert box.list_files() == ["test.out", "test/harness.py"]  # ... but it is removed
        for rel, digest in snap.digests().items():
            assert hashlib.sha256(box.read_file(rel)).hexdigest() == digest
        assert box.exec("test -x test.out && ! test -e link", timeout=30).exit_code == 0
        # a clean workspace settles to nothing
        assert settle(box, snap, "benchmark round 1") == []


def test_a_binary_rewritten_by_the_test_run_is_never_timed(tmp_path: Path) -> None:
    """The test run replaces ./test.out by a script that prints the completion line (as a
    solution that slipped past the static checks did): flagged, failed, and no timed run ever
    runs a test.out other than the build's."""
    fake = "printf '#!/bin/sh\\necho CUDAENV_COMPLETE $CUDAENV_COMPLETION_TOKEN\\n' > test.out"
    problem = cpu_problem(
        tmp_path / "suite", "cpu-rewrite", test_command=f"./test.out && {{ {fake}; }}"
    )
    built: list[str] = []
    timed: list[str] = []

    def hook(when: str, box: Watched, command: str, env: Mapping[str, str]) -> None:
        if box.role != "solution":
            return
        if when == "before" and command == problem.test_command:
            built.append(box.sha("test.out"))
        if when == "before" and command == problem.benchmark_command:
            timed.append(box.sha("test.out"))

    v = _grade(problem, Boxes(problem, hook))
    assert v.passed is False and v.reason and v.reason.startswith("tampering"), v.reason
    assert any("rewrote test.out" in s for s in v.suspected_hack), v.suspected_hack
    assert v.stages["test"].status == "ok"  # the test itself passed; what it left did not
    assert built and all(sha == built[0] for sha in timed)
    # a tampering test run is not kept in the test-outcome cache: the same files fail again
    again = _grade(problem, Boxes(problem, hook))
    assert again.passed is False and again.reason == v.reason


def test_a_leftover_of_a_benchmark_round_is_dead_before_the_baseline_is_timed(
    tmp_path: Path,
) -> None:
    """A timed run of the solution leaves a setsid process (the benchmark command starts it
    for a solution marked SPAWN, as a solution calling a spawn the deny list misses would):
    its host pid is killed right after that run, before any timed run of the baseline, and
    the verdict is a suspected hack."""
    name = f"cudaenv-busy-{uuid.uuid4().hex[:12]}"
    spawn = f"(setsid bash -c 'exec -a {name} sleep 100000' >/dev/null 2>&1 &)"
    problem = cpu_problem(
        tmp_path / "suite",
        "cpu-busy",
        benchmark_command=f"./test.out --perf; s=$?; grep -q SPAWN solution.cpp && {spawn}; exit $s",
    )
    seen: dict[str, list] = {"left": [], "alive at baseline run": [], "killed": []}

    def hook(when: str, box: Watched, command: str, env: Mapping[str, str]) -> None:
        if when == "after" and box.role == "solution" and command == problem.benchmark_command:
            end = time.monotonic() + 60  # a hang guard while the subshell execs sleep
            while not (pids := _live_pids(name)) and time.monotonic() < end:
                time.sleep(0.01)
            seen["left"] += pids
        elif when == "killed" and box.role == "solution" and seen["left"]:
            seen["killed"].append(all(_killed(p, name) for p in seen["left"]))
        elif when == "before" and box.role == "baseline" and command == problem.benchmark_command:
            seen["alive at baseline run"] += [p for p in seen["left"] if not _killed(p, name)]

    try:
        v = _grade(problem, Boxes(problem, hook), solution=CPU_SOLUTION + "// SPAWN\n")
    finally:
        for pid in _live_pids(name):
            os.kill(pid, signal.SIGKILL)
    assert len(seen["left"]) == 1, seen
    assert seen["killed"][:1] == [True], seen  # dead right after the kill that follows the run
    assert seen["alive at baseline run"] == [], seen
    assert v.passed is False, v.reason
    assert any("outlived the solution's benchmark round 1" in s for s in v.suspected_hack)


def test_every_run_gets_a_new_completion_secret(tmp_path: Path) -> None:
    """Test run, each round of the solution and of the baseline: a secret of its own, so one
    that a run read proves nothing in a later run."""
    problem = cpu_problem(tmp_path / "suite", "cpu-tokens")
    tokens: list[str] = []
    runs = (problem.test_command, problem.benchmark_command)

    def hook(when: str, box: Watched, command: str, env: Mapping[str, str]) -> None:
        if when == "before" and command in runs:
            tokens.append(env[TOKEN_ENV])

    v = _grade(problem, Boxes(problem, hook))
    assert v.passed is True and v.stages["benchmark"].status == "ok", v.reason
    assert len(tokens) >= 5  # test, 2 solution rounds, 2 baseline rounds
    assert len(set(tokens)) == len(tokens)


def test_a_timing_line_on_stdout_never_counts(tmp_path: Path) -> None:
    """A process-timed problem whose run prints a ComputeEval timing line: the samples are
    the grader's clock (scripted here: 7.5 ms a run), never the printed 0.001."""
    problem = cpu_problem(
        tmp_path / "suite",
        "cpu-fake-line",
        benchmark_command="./test.out --perf && echo 'COMPUTE_EVAL_TIME_MS: 0.001'",
    )
    v = _grade(problem, Boxes(problem, ms=7.5))
    assert v.passed is True, v.reason
    assert v.solution_timing and v.solution_timing.samples_ms == [7.5, 7.5]
    assert v.baseline_timing and v.baseline_timing.samples_ms == [7.5, 7.5]


def test_every_benchmark_round_gets_a_fresh_seed_shared_by_both_sides(tmp_path: Path) -> None:
    """CUDAENV_BENCH_SEED: new each round (inputs cannot be known in advance), the same for
    the solution's and the baseline's run of one round (they time the same inputs)."""
    problem = cpu_problem(tmp_path / "suite", "cpu-seeds")
    seeds: list[tuple[str, str]] = []

    def hook(when: str, box: Watched, command: str, env: Mapping[str, str]) -> None:
        if when == "before" and command == problem.benchmark_command:
            seeds.append((box.role, env[BENCH_SEED_ENV]))

    v = _grade(problem, Boxes(problem, hook))
    assert v.passed is True and v.stages["benchmark"].status == "ok", v.reason
    assert [role for role, _ in seeds] == ["solution", "baseline"] * 2
    (_, a), (_, b), (_, c), (_, d) = seeds
    assert a == b and c == d and a != c and a.isdigit() and c.isdigit()
