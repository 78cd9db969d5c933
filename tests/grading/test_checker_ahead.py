"""Each checked run's inputs are drawn while the checker decides the run before it, and never
while a process of the solution runs (cudaenv.grading.checker: ``Checker.judge(ahead=)``).

The grader's sandboxes are real local sandboxes behind hooks that log when each checker command
(``gen``, ``verify``) and each run of the runner starts and ends. A ``verify`` that has a run
after it waits (a bounded while) for that run's ``gen`` to start, so a grader that draws only
after deciding shows up as a ``gen`` logged after the ``verify`` ended; no test asserts a
duration.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

import cudaenv
from cudaenv.sandbox import pid_alive
from cudaenv.sandbox.base import ExecResult
from cudaenv.sandbox.local import LocalSandbox
from tests.grading.local_box import LocalBox
from tests.grading.test_split_grading import CHECK, split_problem

#: a gen that logs its pid, then sleeps (within the checker's timeout), then logs "finished"
CHECK_SLOW_GEN = """def cases(stage, rng):
    import os, time
    with open({log!r}, "a") as fh:
        fh.write(f"{{os.getpid()}} started\\n")
    time.sleep(20)
    with open({log!r}, "a") as fh:
        fh.write("finished\\n")
    return _cases(stage, rng)


def _cases(stage, rng):"""

#: how long a verify waits for the next run's gen to start (only a grader that draws after
#: deciding ever waits this long)
WAIT_S = 20.0


def kind(command: str) -> str | None:
    if "check/check.py gen" in command:
        return "gen"
    if "check/check.py verify" in command:
        return "verify"
    if "test/runner.py" in command:
        return "run"
    return None


class Logged(LocalBox):
    """Logs (event, what) for the checker's commands and the runner's runs, in order."""

    log: list[tuple[str, str]] = []
    lock = threading.Lock()
    gen_started = threading.Event()
    verifies_to_hold = 0  # the verifies that have a run after them

    def __init__(self) -> None:
        super().__init__()
        self.inner.close()
        self.inner = LocalSandbox(isolation="rlimits")

    @classmethod
    def reset(cls, hold: int) -> None:
        cls.log, cls.verifies_to_hold = [], hold
        cls.gen_started.clear()

    def before(self, command: str, env: Mapping[str, str]) -> None:
        what = kind(command)
        if what is None:
            return
        with Logged.lock:
            Logged.log.append(("start", what))
        if what == "gen":
            Logged.gen_started.set()
        if what == "verify" and Logged.verifies_to_hold > 0:
            Logged.verifies_to_hold -= 1
            Logged.gen_started.wait(WAIT_S)

    def after(self, command: str, env: Mapping[str, str], res: ExecResult) -> ExecResult:
        if (what := kind(command)) is not None:
            with Logged.lock:
                Logged.log.append(("end", what))
                if what == "run":  # the next gen starts after this
                    Logged.gen_started.clear()
        return res


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def overlaps_with_runs(log: list[tuple[str, str]]) -> list[int]:
    """Indices where a checker command starts while a run is in flight, or the reverse."""
    bad, running, checking = [], 0, 0
    for i, (event, what) in enumerate(log):
        step = 1 if event == "start" else -1
        if what == "run":
            if event == "start" and checking:
                bad.append(i)
            running += step
        else:
            if event == "start" and running:
                bad.append(i)
            checking += step
    return bad


def test_the_next_runs_inputs_are_drawn_while_the_checker_decides(tmp_path: Path) -> None:
    problem, _ = split_problem(tmp_path)
    rounds = 3
    Logged.reset(hold=rounds)  # the test run's verify and every round's but the last
    v = cudaenv.grade(
        problem,
        {"solution.sh": "true\n"},
        sandbox=Logged,
        mode="optimize",
        rounds=rounds,
        test_cache=False,
    )
    assert v.passed is True, v
    log = list(Logged.log)
    assert [w for e, w in log if e == "start" and w == "run"] == ["run"] * (1 + 2 * rounds)
    verifies = [i for i, (e, w) in enumerate(log) if (e, w) == ("start", "verify")]
    assert len(verifies) == 1 + rounds  # the baseline's runs are not verified
    for i in verifies[:-1]:  # the next run's gen started before this verify ended
        ran = max(j for j in range(i) if log[j] == ("end", "run"))
        end = next(j for j in range(i + 1, len(log)) if log[j] == ("end", "verify"))
        assert ("start", "gen") in log[ran:end], log
    assert overlaps_with_runs(log) == [], log


def test_no_draw_after_a_failed_run(tmp_path: Path) -> None:
    """A run the checker rejects ends the grading: the verify that rejected it had the next
    round's draw beside it, and nothing of the checker runs after."""
    problem, _ = split_problem(tmp_path)
    wrong = "python -c \"import numpy as np; np.save('.cudaenv-io/out/c1/y.npy', np.zeros(5, np.int64))\"\n"
    Logged.reset(hold=0)
    v = cudaenv.grade(
        problem, {"solution.sh": wrong}, sandbox=Logged, mode="optimize", test_cache=False
    )
    assert v.passed is False and "wrong outputs" in v.reason, v.reason
    log = list(Logged.log)
    assert [w for e, w in log if e == "start"].count("run") == 1
    assert overlaps_with_runs(log) == [], log


def test_the_overlap_check_sees_a_checker_beside_a_run() -> None:
    """The helper the tests above rely on finds an overlap in either order."""
    assert overlaps_with_runs([("start", "run"), ("start", "gen"), ("end", "gen")]) == [1]
    assert overlaps_with_runs([("start", "verify"), ("start", "run")]) == [1]
    assert overlaps_with_runs([("start", "gen"), ("end", "gen"), ("start", "run")]) == []


def test_a_failed_build_stops_the_draw_in_flight(tmp_path: Path) -> None:
    """The test run's inputs are drawn during the build; when the build fails the grading
    ends at once, and the draw (here a gen that would sleep) is killed with the checker's
    sandbox, not waited for."""
    gen_log = tmp_path / "gen.log"
    slow = CHECK_SLOW_GEN.format(log=str(gen_log))
    # the build fails once the gen is under way (bounded: a build that never sees it fails too)
    build = f"for i in $(seq 600); do [ -s {gen_log} ] && break; sleep 0.1; done; exit 1"
    problem, _ = split_problem(
        tmp_path, CHECK.replace("def cases(stage, rng):", slow), build_command=build
    )
    v = cudaenv.grade(
        problem,
        {"solution.sh": "true\n"},
        sandbox_options={"isolation": "rlimits"},
        test_cache=False,
    )
    assert v.passed is False and v.stages["build"].status == "failed", v
    pid = int(gen_log.read_text().split()[0])
    assert not pid_alive(pid)  # killed when the grading closed its checker
    assert "finished" not in gen_log.read_text()
