"""A split harness's runner decides nothing, so the rules that only guarded the completion
token warn there (``GradingPolicy.for_split_harness``); on a token harness they still fail.

Graded for real (g++, local sandboxes) on the red-team CPU fixture ``cpu-add`` (split) and on
the same problem as a token harness (tests/redteam/test_split_defences.py's ``token_add``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.problems.policy import (
    COMPUTEEVAL,
    REPOSITORY,
    STRICT,
    TOKEN_GUARDS,
    GradingPolicy,
    policy_record,
)
from cudaenv.redteam.fixtures import fixture_suite
from tests.redteam.test_split_defences import token_add

# correct, with a constructor and an exit(0) the token harness's rules refuse
WARMED_ADD = """\
#include <cstdlib>
#include "add.h"
static int g_ready;
__attribute__((constructor)) static void warm() { g_ready = 1; }
int add(int a, int b) {
    if (!g_ready) exit(0);
    return a + b;
}
"""
# ends the runner "successfully" before it wrote a single output
EARLY_EXIT = '#include <cstdlib>\n#include "add.h"\nint add(int a, int b) { exit(0); }\n'


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def test_the_token_guards_move_to_warn_and_nothing_else_does() -> None:
    for policy in (STRICT, COMPUTEEVAL):
        relaxed = policy.for_split_harness()
        assert relaxed.checks == policy.checks - TOKEN_GUARDS
        assert relaxed.warn == policy.checks & TOKEN_GUARDS
        assert {"symbols_shadowing", "cpp_identifiers", "cpp_text", "precision"} <= relaxed.checks
    assert REPOSITORY.for_split_harness() is REPOSITORY


def test_a_policy_with_warnings_survives_its_record() -> None:
    relaxed = STRICT.for_split_harness()
    record = policy_record(relaxed)
    assert isinstance(record, dict) and record["warn"] == sorted(TOKEN_GUARDS)
    assert GradingPolicy.model_validate(record) == relaxed


def test_split_problems_are_graded_by_the_relaxed_policy() -> None:
    suite = fixture_suite()
    assert suite.problem("cpu-add").policy_in_force == STRICT.for_split_harness()
    token = [p for p in cudaenv.load_suite("builtin") if not p.split]
    assert all(p.policy_in_force == p.grading_policy for p in token)


def test_a_guard_the_token_needed_only_warns_on_a_split_harness(tmp_path: Path) -> None:
    split = cudaenv.grade(fixture_suite().problem("cpu-add"), {"solution.cpp": WARMED_ADD})
    assert split.passed is True, split
    tail = split.stages["static"].output_tail
    assert "warning:" in tail and "constructor" in tail and "exit" in tail, tail
    assert split.suspected_hack == []
    token = cudaenv.grade(token_add(tmp_path), {"solution.cpp": WARMED_ADD})
    assert token.passed is False and token.stages["static"].status == "failed", token


def test_an_early_exit_still_fails_a_split_harness_through_its_checker() -> None:
    verdict = cudaenv.grade(fixture_suite().problem("cpu-add"), {"solution.cpp": EARLY_EXIT})
    assert verdict.stages["static"].status == "ok"
    assert verdict.passed is False and verdict.failure == "agent", verdict
    assert "missing" in (verdict.reason or ""), verdict.reason
