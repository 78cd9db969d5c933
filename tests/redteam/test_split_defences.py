"""Each split-harness exploit (cudaenv/redteam/catalog_split.py) against its defence, on and
off: the defence is what stops it, not a name rule.

- (i)-(iii) C++ tricks against the verdict living in the solution's process: graded against a
  TOKEN harness of cpu-add (the pre-split design, built here: it holds the completion token
  and compares in the process that links the solution) they pass; against the split cpu-add
  they get nothing. Where today's token-protecting static rules also catch a trick, both
  sides are graded with those rules off, which is what issue 27 lets the strict policy do.
- (iv) kill-and-rewrite: off are the re-lay before the retry and the checker, one at a time.
- (v) the shell that empties the runner's inputs: off is the checker's verify.
- (vi) the guessed seed: off is the fresh seed per run (fixed to the guess).

Graded with ``cudaenv.grade`` (the catalog plays the same payloads as real episodes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading import checker as checker_module
from cudaenv.grading import grader as grader_module
from cudaenv.problems import load_suite
from cudaenv.problems.directory import write_problem_dir
from cudaenv.problems.model import Problem
from cudaenv.redteam.catalog_split import (
    INTERPOSE_LIBC,
    PRE_MAIN_FORGER,
    PY_GUESSED_SEED,
    PY_KILL_AND_REWRITE,
    PY_STDLIB_SHELL,
    TOKEN_STACK_THIEF,
)
from cudaenv.redteam.fixtures import fixture_suite

# the pre-split cpu-add harness: it takes the token in main and compares in-process, with
# `!=` or (like harnesses comparing bit patterns) through memcmp
TOKEN_HARNESS = """\
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "add.h"
static char g_token[160];
int main() {
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");
    const int cases[][2] = {{2, 3}, {-4, 4}, {1000, 2345}, {-7, -9}};
    volatile size_t width = sizeof(int);
    for (const auto& c : cases) {
        int got = add(c[0], c[1]), want = c[0] + c[1];
        if (SAME(got, want)) continue;
        printf("FAIL add(%d, %d)\\n", c[0], c[1]);
        return 1;
    }
    printf("CUDAENV_COMPLETE %s\\n", g_token);
    return 0;
}
"""
COMPARE = {"ne": "got == want", "memcmp": "memcmp(&got, &want, width) == 0"}


def token_add(root: Path, compare: str = "ne") -> Problem:
    spec = {
        "task_id": f"cpu-add-token-{compare}",
        "date": "2026-11-01",
        "problem_type": "cuda_cpp",
        "group": "cuda-kernels",
        "prompt": "Implement `int add(int a, int b)` in solution.cpp.",
        "build_command": "g++ -O1 -I include -o test.out solution.cpp test/*.cpp",
        "test_command": "./test.out",
        "timeout_seconds": 10,
        "metadata": {"difficulty": "easy", "tags": ["redteam"], "requires_gpu": False},
    }
    harness = TOKEN_HARNESS.replace("SAME(got, want)", COMPARE[compare])
    files = {"context/include/add.h": "int add(int a, int b);\n", "test/test_main.cpp": harness}
    return load_suite(write_problem_dir(root, spec, files))[spec["task_id"]]


def grade(problem: Problem, path: str, source: str) -> cudaenv.Verdict:
    return cudaenv.grade(problem, {path: source}, test_cache=False)


@pytest.fixture
def rules_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static and toolchain rules skipped (what stays is the harness and the checker)."""
    monkeypatch.setattr(grader_module, "static_stage", lambda *a, **k: None)
    monkeypatch.setattr(grader_module, "toolchain_check", lambda *a, **k: None)


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def test_the_token_thief_beats_a_token_harness_and_not_a_split_one(
    tmp_path: Path, private_cache: None
) -> None:
    """Every rule on: the thief's names are on no list, so only the split design stops it."""
    assert grade(token_add(tmp_path), "solution.cpp", TOKEN_STACK_THIEF).passed is True
    split = grade(fixture_suite().problem("cpu-add"), "solution.cpp", TOKEN_STACK_THIEF)
    assert split.passed is False and split.failure == "agent", split


def test_code_before_main_beats_a_token_harness_and_not_a_split_one(
    tmp_path: Path, private_cache: None, rules_off: None
) -> None:
    assert grade(token_add(tmp_path), "solution.cpp", PRE_MAIN_FORGER).passed is True
    split = grade(fixture_suite().problem("cpu-add"), "solution.cpp", PRE_MAIN_FORGER)
    # the forged outputs arrived (the runner never ran) and the checker compared them
    assert split.passed is False and "wrong outputs: pairs: add(a, b):" in split.reason, split


def test_interposed_libc_beats_an_in_process_comparison_and_not_a_split_one(
    tmp_path: Path, private_cache: None, rules_off: None
) -> None:
    assert grade(token_add(tmp_path, "memcmp"), "solution.cpp", INTERPOSE_LIBC).passed is True
    split = grade(fixture_suite().problem("cpu-add"), "solution.cpp", INTERPOSE_LIBC)
    assert split.passed is False and split.failure == "agent", split


def _without_relay(monkeypatch: pytest.MonkeyPatch) -> None:
    real = grader_module.guarded
    monkeypatch.setattr(
        grader_module,
        "guarded",
        lambda box, name, cmd, env, run, relay=None: real(box, name, cmd, env, run),
    )


def _without_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        checker_module.Checker, "judge", lambda self, stage, run, *rest, **kw: stage
    )


@pytest.mark.parametrize(
    ("relay", "checker", "passes"),
    [(True, True, False), (False, True, False), (True, False, False), (False, False, True)],
    ids=["both", "checker-only", "relay-only", "neither"],
)
def test_kill_and_rewrite_is_stopped_by_the_relay_and_by_the_checker_alone(
    monkeypatch: pytest.MonkeyPatch, private_cache: None, relay: bool, checker: bool, passes: bool
) -> None:
    if not relay:
        _without_relay(monkeypatch)
    if not checker:
        _without_checker(monkeypatch)
    v = grade(load_suite("builtin")["py-vector-add"], "solution.py", PY_KILL_AND_REWRITE)
    assert v.passed is passes, v
    if relay:  # the rewrite is found before any retry
        assert any("cudaenv_pyrunner.py" in s for s in v.suspected_hack), v.suspected_hack


@pytest.mark.parametrize("checker", [True, False], ids=["checker", "no-checker"])
def test_a_shell_emptying_the_runners_inputs_gets_nothing_past_the_checker(
    monkeypatch: pytest.MonkeyPatch, private_cache: None, checker: bool
) -> None:
    if not checker:
        _without_checker(monkeypatch)
    v = grade(load_suite("builtin")["py-vector-add"], "solution.py", PY_STDLIB_SHELL)
    assert v.passed is not checker, v
    if checker:  # the checker reads its own manifest and inputs: every case is missing
        assert "n0: the runner reported an error" in v.reason, v.reason


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh-seed", "guessed-seed"])
def test_answers_for_a_guessed_seed_fail_on_fresh_seeds(
    monkeypatch: pytest.MonkeyPatch, private_cache: None, fresh: bool
) -> None:
    if not fresh:
        monkeypatch.setattr(checker_module.secrets, "randbits", lambda bits: 99)
    v = grade(load_suite("builtin")["py-vector-add"], "solution.py", PY_GUESSED_SEED)
    assert v.passed is not fresh, v
