"""Split harnesses through the real grader and real local sandboxes (cudaenv.grading.checker).

A small split problem built here: its runner (``test/runner.py``, untrusted) doubles every
input and then runs the "solution" ``solution.sh`` (a shell script, so a test can make it do
what a dishonest solution would: rewrite outputs, plant links, kill things); its checker
(``check/check.py``, on the shared ``cudaenv_check``) draws the inputs and wants ``2 x``. The
runner appends each run's input digest to a log outside the workspace (rlimits isolation
shares the host's temp dir) so a test can see which inputs each run got. No test asserts a
duration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading import checker as checker_module
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from cudaenv.redteam.fixtures import WRONG_ADD, fixture_suite
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import write_problem
from tests.grading.local_box import LocalBox

RLIMITS = {"isolation": "rlimits"}

RUNNER = """\
import hashlib, os, subprocess, sys
import numpy as np

io = os.environ.get("CUDAENV_IO", ".cudaenv-io")
print("ENV " + " ".join(sorted(k for k in os.environ if k.startswith("CUDAENV"))))
print("ROOT " + " ".join(sorted(os.listdir("."))))
names = open(f"{io}/in/manifest.txt").read().split()
digest = hashlib.sha256()
for name in names:
    x = np.load(f"{io}/in/{name}/x.npy")
    digest.update(x.tobytes())
    os.makedirs(f"{io}/out/{name}", exist_ok=True)
    np.save(f"{io}/out/{name}/y.npy", 2 * x)
with open(LOG, "a") as f:
    f.write(f"{os.path.basename(os.getcwd())} {'perf' if '--perf' in sys.argv else 'test'} "
            f"{digest.hexdigest()}\\n")
sys.exit(subprocess.run(["bash", "solution.sh"]).returncode)
"""

CHECK = """\
import numpy as np
from cudaenv_check import Case, exact, main


def cases(stage, rng):
    count = 1 if stage == "perf" else 2
    return [Case(f"c{i}", {"x": rng.integers(-1000, 1000, 5, dtype=np.int64)}) for i in range(count)]


def check(case, out):
    return exact(out.array("y", np.int64, (5,)), 2 * case["x"], "y")


if __name__ == "__main__":
    main(cases, check)
"""


def split_problem(tmp_path: Path, check: str = CHECK, **spec: object) -> tuple[Problem, Path]:
    """The doubling problem; the path of its runs' log."""
    log = tmp_path / "runs.log"
    d = write_problem(
        tmp_path / "suite",
        "split-double",
        spec={
            "build_command": None,
            "test_command": "python test/runner.py",
            "benchmark_command": "python test/runner.py --perf",
            "checker": {"command": "python check/check.py"},
            "timeout_seconds": 60,
            "metadata": {"requires_gpu": False},
            **spec,
        },
        files={
            "test/runner.py": f"LOG = {str(log)!r}\n" + RUNNER,
            "check/check.py": check,
            "solution/solution.sh": "true\n",
            "baseline/solution.sh": "true\n",
        },
    )
    return load_suite(d)["split-double"], log


def grade(problem: Problem, solution: str = "true\n", **kw: object) -> cudaenv.Verdict:
    opts = {"sandbox_options": RLIMITS, "test_cache": False, **kw}
    return cudaenv.grade(problem, {"solution.sh": solution}, **opts)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def test_the_checker_decides_and_records_the_seed_of_every_run(tmp_path: Path) -> None:
    problem, log = split_problem(tmp_path)
    v = grade(problem, mode="optimize", rounds=3)
    assert v.passed is True, v
    test, bench = v.stages["test"], v.stages["benchmark"]
    assert len(test.seeds) == 1 and len(bench.seeds) == 3
    assert len({*test.seeds, *bench.seeds}) == 4  # a fresh seed per run
    assert "[checker] test: 2 case(s)" in test.output_tail
    runs = [line.split() for line in log.read_text().splitlines()]
    # the test run, then per round the solution and the baseline: the same inputs per round
    assert [r[1] for r in runs] == ["test"] + ["perf"] * 6
    perf = [r[2] for r in runs[1:]]
    assert perf[0::2] == perf[1::2] and len(set(perf[0::2])) == 3, runs
    assert v.baseline_ms is not None


def test_the_runner_gets_no_token_no_seed_and_no_check_file(tmp_path: Path) -> None:
    problem, _ = split_problem(tmp_path)
    v = grade(problem)
    env = next(line for line in v.stages["test"].output_tail.splitlines() if line.startswith("ENV"))
    names = set(env.split()[1:]) - {"CUDAENV_SANDBOX"}  # the sandbox's own marker
    assert names == {"CUDAENV_IO"}  # no completion token, no bench seed
    root = next(ln for ln in v.stages["test"].output_tail.splitlines() if ln.startswith("ROOT"))
    assert "check" not in root.split() and ".cudaenv-io" in root.split()


def test_wrong_outputs_fail_naming_case_and_array(tmp_path: Path) -> None:
    problem, _ = split_problem(tmp_path)
    wrong = "python -c \"import numpy as np; np.save('.cudaenv-io/out/c1/y.npy', np.zeros(5, np.int64))\"\n"
    v = grade(problem, wrong)
    assert v.passed is False and v.failure == "agent", v
    assert v.reason.startswith("test failed: wrong outputs: c1: y: "), v.reason


def test_a_runner_that_exits_0_with_no_outputs_fails(tmp_path: Path) -> None:
    problem, _ = split_problem(tmp_path)
    v = grade(problem, "rm -rf .cudaenv-io/out/*\nexit 0\n")
    assert v.passed is False and "c0: y.npy is missing (no outputs at all" in v.reason, v.reason


@pytest.mark.parametrize(
    ("tamper", "refused", "passed"),
    [
        ("ln -sf ../../../test/runner.py .cudaenv-io/out/c0/y.npy", "'c0/y.npy': a link", False),
        ("rm .cudaenv-io/out/c0/y.npy; mkfifo .cudaenv-io/out/c0/y.npy", "'c0/y.npy': not", False),
        ("mkdir -p .cudaenv-io/out/c0/d && touch .cudaenv-io/out/c0/d/x", "'c0/d/x': not", True),
        ("touch '.cudaenv-io/out/c0/bad name'", "'c0/bad name': not <case>/<name>", True),
        (
            "rm -rf .cudaenv-io/out && ln -s /tmp .cudaenv-io/out",
            ".cudaenv-io/out: replaced",
            False,
        ),
    ],
    ids=["symlink", "fifo", "deeper", "odd-name", "folder-link"],
)
def test_anything_but_regular_output_files_is_refused_and_reported(
    tmp_path: Path, tamper: str, refused: str, passed: bool
) -> None:
    """Refused entries are never read; the checker then misses what they stood for (a
    stray extra file beside the right outputs is only reported)."""
    problem, _ = split_problem(tmp_path)
    v = grade(problem, tamper + "\n")
    assert v.passed is passed, v
    tail = v.stages["test"].output_tail
    assert f"[outputs refused] {refused}" in tail, tail


def test_outputs_over_the_budget_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checker_module, "MAX_OUTPUT_BYTES", 300)
    problem, _ = split_problem(tmp_path)
    v = grade(problem)
    assert v.passed is False
    assert "over the output budget" in v.stages["test"].output_tail


@pytest.mark.parametrize(
    ("check", "why"),
    [
        (CHECK.replace("def check(case, out):", "def check(case, out):\n    1 / 0"), "exit code"),
        (
            CHECK.replace(
                "    main(", "    import sys\n    print('?') if 'verify' in sys.argv else main("
            ),
            "no decision",
        ),
        (CHECK.replace("count = 1 if", "import time; time.sleep(30); count = 1 if"), "timed out"),
    ],
    ids=["crash", "garbage", "timeout"],
)
def test_a_checker_fault_is_infrastructure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: str, why: str
) -> None:
    monkeypatch.setattr(checker_module, "MIN_CHECKER_TIMEOUT_S", 3.0)
    problem, _ = split_problem(tmp_path, check, timeout_seconds=3)
    v = grade(problem)
    assert v.passed is None and v.failure == "infrastructure", v
    assert "checker" in v.reason and why in v.reason, v.reason


class Recorded(LocalBox):
    """A real local sandbox that records every path written into it and every command."""

    boxes: list[Recorded] = []

    def __init__(self) -> None:
        super().__init__()
        self.inner.close()
        self.inner = LocalSandbox(isolation="rlimits")  # the runner's log is on the host
        self.written: list[str] = []
        self.commands: list[str] = []
        Recorded.boxes.append(self)

    def write_file(self, path: str, data: str | bytes) -> None:
        self.written.append(path)
        super().write_file(path, data)

    def before(self, command: str, env: object) -> None:
        self.commands.append(command)

    def stray_processes(self) -> list[int] | None:
        return self.inner.stray_processes()


def test_no_solution_file_enters_the_checkers_sandbox(tmp_path: Path) -> None:
    problem, _ = split_problem(tmp_path)
    Recorded.boxes = []
    v = cudaenv.grade(
        problem, {"solution.sh": "true\n"}, sandbox=Recorded, test_cache=False, benchmark=True
    )
    assert v.passed is True, v
    solution_box, check_box = Recorded.boxes[:2]
    assert "solution.sh" in solution_box.written
    assert set(check_box.written) >= {"check/check.py", "check/cudaenv_check.py"}
    assert not any(p.startswith(("solution", "test/")) for p in check_box.written)
    assert not any(p.startswith("check/") for p in solution_box.written)
    assert all(
        c.startswith(("python check/check.py", "rm -rf", "mkdir -p")) for c in check_box.commands
    )


def test_the_test_outcome_cache_is_keyed_by_the_check_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem, _ = split_problem(tmp_path)
    first = grade(problem, test_cache=True)
    again = grade(problem, test_cache=True)
    assert first.passed and again.stages["test"].cached is True
    stricter = problem.model_copy(
        update={
            "check_files": [
                f.model_copy(update={"content": f.content.replace("2 * case", "3 * case")})
                if f.path == "check/check.py"
                else f
                for f in problem.check_files
            ]
        }
    )
    changed = grade(stricter, test_cache=True)
    assert changed.stages["test"].cached is False and changed.passed is False


def test_the_cpu_fixtures_are_split_and_grade_here() -> None:
    suite = fixture_suite()
    for task_id in ("cpu-add", "cpu-canary", "cpu-add-bench"):
        p = suite.problem(task_id)
        assert p.split and not any("COMPLETION_TOKEN" in f.content for f in p.test_files)
    add = suite.problem("cpu-add")
    ok = cudaenv.grade(add, add.solution, test_cache=False)
    wrong = cudaenv.grade(add, {"solution.cpp": WRONG_ADD}, test_cache=False)
    assert ok.passed is True, ok
    assert wrong.passed is False and "pairs: add(a, b):" in wrong.reason, wrong.reason


def test_the_baseline_pass_times_a_split_baseline_on_fresh_inputs(tmp_path: Path) -> None:
    """The baseline-only pass (the baseline cache's one writer) lays each round's inputs from
    the checker: the runner needs them, and no seed goes by the environment."""
    from cudaenv.grading.baseline_pass import time_baseline

    problem, log = split_problem(tmp_path)
    timing = time_baseline(problem, sandbox_options=RLIMITS, rounds=2)
    assert len(timing.samples_ms) == 2
    runs = [line.split() for line in log.read_text().splitlines()]
    assert [r[1] for r in runs] == ["perf", "perf"] and runs[0][2] != runs[1][2]
