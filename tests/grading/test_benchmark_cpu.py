"""The optimize-mode pipeline for real, on a CPU-only problem (no GPU needed): interleaved
solution/baseline rounds, each after a kill of what earlier runs left, the speedup and its
interval, the baseline cache and its override, and the speedup rewards. GPU problems take the
same path with the GPU lease and the profiler (tests/grading/test_grader_gpu.py).

Every command runs for real in a local sandbox; only the durations of the timed runs are
scripted (:class:`Boxes`), so what these tests assert is the grader's arithmetic on known
samples, never a race between two programs on a loaded machine. How much faster the real
reference is than the real baseline is measured by ``bench/bench_speedup.py``.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading import rewards
from cudaenv.grading.baseline_pass import time_baseline
from cudaenv.grading.timing import speedup_ci
from cudaenv.grading.verdict import Verdict
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from cudaenv.sandbox.base import ExecResult, Sandbox
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem
from tests.grading.local_box import LocalBox

# textually another solution (its own build), as fast as the reference: timings are scripted
BASELINE = """\
#include "add.h"
int add(int a, int b) {
    volatile long s = 0;
    for (long i = 0; i < 1000; ++i) s = s + i;
    return a + b + (int)(s - s);
}
"""
BUILD = "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp"
# the grader builds and tests the solution before it makes the baseline's box
ROLES = ("solution", "baseline")
Event = tuple[str, str]  # (what happened, whose box): ("kill" | "timed" | "tested", role)


class Recorder(LocalBox):
    """A real local sandbox that logs the grader's kills and timed runs, in order, and reports
    the next scripted duration (when given) as the duration of each timed run."""

    def __init__(self, role: str, boxes: Boxes) -> None:
        super().__init__()
        self.role = role
        self.boxes = boxes

    def _event(self, what: str) -> None:
        self.boxes.log.append((what, self.role))
        if self.boxes.on_event is not None:
            self.boxes.on_event((what, self.role))

    def before(self, command: str, env: Mapping[str, str]) -> None:
        if command == self.boxes.problem.benchmark_command:
            self._event("timed")

    def after(self, command: str, env: Mapping[str, str], res: ExecResult) -> ExecResult:
        if command == self.boxes.problem.test_command:
            self._event("tested")
        script = self.boxes.samples_ms.get(self.role)
        if command == self.boxes.problem.benchmark_command and script is not None:
            res = res.model_copy(update={"duration_s": script.pop(0) / 1000.0})
        return res

    def killed(self) -> None:
        self._event("kill")


class Boxes:
    """The sandbox factory handed to ``grade``: one :class:`Recorder` per box, the solution's
    first, then the baseline's; ``solution_ms``/``baseline_ms`` script their timed runs."""

    def __init__(
        self,
        problem: Problem,
        solution_ms: list[float] | None = None,
        baseline_ms: list[float] | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.problem = problem
        self.samples_ms = {"solution": solution_ms, "baseline": baseline_ms}
        self.on_event = on_event
        self.log: list[Event] = []
        self.made: list[str] = []

    def __call__(self) -> Sandbox:
        role = ROLES[len(self.made)]
        self.made.append(role)
        return Recorder(role, self)


def cpu_problem(root: Path, task_id: str, **spec: object) -> Problem:
    write_problem(
        root,
        task_id,
        spec={
            "build_command": BUILD,
            "benchmark_command": "./test.out --perf",  # the test command is ./test.out
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
            **spec,
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": BASELINE,
        },
    )
    return load_suite(root)[task_id]


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Problem:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    return cpu_problem(tmp_path / "suite", "cpu-add-bench")


def grade(problem: Problem, boxes: Boxes, **kw: object) -> Verdict:
    return cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, sandbox=boxes, **kw)


def test_optimize_mode_measures_a_speedup(problem: Problem) -> None:
    sol, base = [10.0, 12.0, 11.0], [40.0, 44.0, 42.0]
    v = grade(problem, Boxes(problem, list(sol), list(base)), mode="optimize", rounds=3)
    assert v.passed is True, v.reason
    bench = v.stages["benchmark"]
    assert bench.status == "ok" and "timed on the CPU" in (bench.reason or "")
    assert v.solution_timing and v.solution_timing.samples_ms == sol
    assert (v.solution_timing.median_ms, v.solution_timing.spread_ms) == (11.0, 2.0)
    assert v.baseline_timing and v.baseline_timing.samples_ms == base
    assert (v.solution_ms, v.baseline_ms) == (11.0, 42.0)
    assert v.speedup == pytest.approx(42.0 / 11.0)
    assert v.speedup_ci == pytest.approx(speedup_ci(sol, base))
    assert v.speedup_ci[0] <= v.speedup <= v.speedup_ci[1]
    assert rewards.speedup(v) == pytest.approx(math.log2(42.0 / 11.0))
    assert rewards.tiered(v) == 1.0  # >= 3x
    assert rewards.get_reward(None, "optimize")(v) == rewards.speedup(v)


def test_rounds_alternate_and_each_timed_run_follows_a_kill(problem: Problem) -> None:
    """Solution and baseline rounds interleave (load from elsewhere hits both alike), and each
    timed run starts right after a kill of everything its box still ran; the solution's box is
    killed right after each of its runs (the tests', every round), before the baseline's."""
    boxes = Boxes(problem, [5.0] * 3, [5.0] * 3)
    v = grade(problem, boxes, mode="optimize", rounds=3)
    assert v.passed is True and v.speedup == 1.0, v.reason
    assert boxes.made == ["solution", "baseline"]
    one_round = [("timed", "solution"), ("kill", "solution"), ("kill", "baseline")]
    one_round.append(("timed", "baseline"))
    assert [e for e in boxes.log if e[0] != "tested"] == [("kill", "solution"), *one_round * 3]


def test_a_slower_solution_gets_no_speedup_credit(problem: Problem) -> None:
    boxes = Boxes(problem, [40.0, 44.0, 42.0], [10.0, 12.0, 11.0])
    v = grade(problem, boxes, mode="optimize", rounds=3)
    assert v.passed is True, v.reason
    assert v.speedup == pytest.approx(11.0 / 42.0)
    assert rewards.speedup(v) == 0.0
    assert rewards.speedup(v, allow_negative=True) == -1.0  # log2(0.26) clipped at lo
    assert rewards.tiered(v) == 0.2


def test_baseline_timing_is_cached_and_can_be_forced(problem: Problem) -> None:
    # only a baseline-only pass writes the cache (a grade's interleaved timing never does)
    time_baseline(problem, sandbox=Boxes(problem, [40.0, 42.0]), rounds=2)
    # not re-timed: no baseline box, the very same samples come back from the cache
    boxes = Boxes(problem, [20.0, 20.0], baseline_ms=[])
    again = grade(problem, boxes, mode="optimize", rounds=2)
    assert boxes.made == ["solution"] and ("timed", "baseline") not in boxes.log
    assert again.baseline_timing and again.baseline_timing.samples_ms == [40.0, 42.0]
    assert again.speedup == pytest.approx(41.0 / 20.0)
    forced = grade(
        problem,
        Boxes(problem, [10.0, 10.0], [80.0, 84.0]),
        mode="optimize",
        rounds=2,
        force_baseline=True,
    )
    assert forced.baseline_timing and forced.baseline_timing.samples_ms == [80.0, 84.0]
    assert forced.speedup == pytest.approx(8.2)
    # the forced timing ran beside a solution: it decided that verdict, the cache kept its own
    later = grade(problem, Boxes(problem, [10.0, 10.0], []), mode="optimize", rounds=2)
    assert later.baseline_timing and later.baseline_timing.samples_ms == [40.0, 42.0]


def test_solve_mode_does_not_benchmark_unless_asked(problem: Problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION})
    assert "benchmark" not in v.stages and v.speedup is None
    # the grader's own clock, unscripted: one sample per round, and the ratio of the medians
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, benchmark=True, rounds=2)
    assert v.stages["benchmark"].status == "ok", v.stages["benchmark"]
    assert v.solution_timing and len(v.solution_timing.samples_ms) == 2
    assert v.baseline_timing and len(v.baseline_timing.samples_ms) == 2
    # the reported figures are the medians of the samples, and the speedup their ratio
    assert v.solution_ms == pytest.approx(statistics.median(v.solution_timing.samples_ms), abs=1e-5)
    assert v.baseline_ms == pytest.approx(statistics.median(v.baseline_timing.samples_ms), abs=1e-5)
    assert v.speedup == pytest.approx(v.baseline_ms / v.solution_ms)


# ------------------------------------------------------------ leftovers of the test run


def _live_pids(argv0: str) -> list[int]:
    """Host pids of the live (not zombie) processes whose ``argv[0]`` is ``argv0``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and not _killed(int(entry), argv0):
            found.append(int(entry))
    return found


def _killed(pid: int, argv0: str) -> bool:
    """``pid`` (named ``argv0``) is gone, a zombie, or has a SIGKILL pending: it was killed,
    whether or not it has been reaped yet."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            name = fh.read().split(b"\0")[0]
        with open(f"/proc/{pid}/status") as fh:
            status = dict(ln.split(":", 1) for ln in fh.read().splitlines() if ":" in ln)
    except OSError:
        return True
    if name != argv0.encode():  # exited (a zombie's cmdline is empty; or the pid was reused)
        return True
    if status["State"].strip()[:1] in ("Z", "X"):
        return True
    kill = 1 << (signal.SIGKILL - 1)
    return any(int(status[k], 16) & kill for k in ("SigPnd", "ShdPnd"))


def test_nothing_from_the_test_run_outlives_it(tmp_path: Path, monkeypatch) -> None:
    """A process the test stage leaves running (here the problem's own test command starts
    one, as a solution that slipped past the static checks might) is killed before the first
    timed run: otherwise it could load the machine during the baseline's runs. Proved by its
    host pid: alive when the test stage ended, killed when the first timed run started."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    name = f"cudaenv-leftover-{uuid.uuid4().hex[:12]}"
    leftover = f"(exec -a {name} sleep 100000 >/dev/null 2>&1 &)"
    problem = cpu_problem(
        tmp_path / "suite", "cpu-leftover", test_command=f"./test.out; s=$?; {leftover}; exit $s"
    )
    seen: dict[str, list[int] | bool] = {}

    def on_event(event: Event) -> None:
        if event == ("tested", "solution"):
            # its subshell may not have exec'd sleep yet: wait for it (a hang guard, no race)
            end = time.monotonic() + 120
            while not (pids := _live_pids(name)) and time.monotonic() < end:
                time.sleep(0.01)
            seen["after test"] = pids
        elif event == ("timed", "solution") and "at first timed run" not in seen:
            seen["at first timed run"] = all(_killed(p, name) for p in seen["after test"])

    try:
        v = grade(problem, Boxes(problem, on_event=on_event), mode="optimize", rounds=2)
        assert v.passed is True and v.stages["benchmark"].status == "ok", v.reason
        assert len(seen["after test"]) == 1, seen  # the leftover ran after the test stage
        assert seen["at first timed run"] is True  # and was dead before any timed run
    finally:
        for pid in _live_pids(name):  # whatever the grader missed
            os.kill(pid, signal.SIGKILL)
