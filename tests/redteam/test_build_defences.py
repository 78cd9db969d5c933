"""Family 3 (cudaenv/redteam/catalog_build.py) against its defences, on and off, on the red
team's repository task (a pytest project built by ``make``, the bug left in):

- the Makefile rewriting the held-out test: the build-file reset, then the protected-path
  check after the build; with the Makefile kept AND the check off, it passes;
- the script the build runs doing the same: the protected-path check; off, it passes;
- a Harbor task's solution/solve.sh rewriting the hidden test.sh: the build's restore of
  protected files; off, the rewritten verifier rewards the wrong answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.grading import build, repo_grader
from cudaenv.grading.grader import grade
from cudaenv.redteam.catalog_build import HARBOR_SOLVE, MAKEFILE_REWRITE, STAMP_REWRITE
from cudaenv.redteam.fixtures_repo import agent_diff, harbor_problem, repo_problem

KEPT = {"repo_policy": {"build_file_changes": "kept"}}


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def _check_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repo_grader._Run, "tampered", lambda self, box, composed, after: False)


@pytest.mark.usefixtures("private_cache")
def test_the_fixture_is_a_task_gold_passes_and_the_bug_fails() -> None:
    p = repo_problem()
    assert grade(p, p.solution).passed is True
    nop = grade(p, "")
    assert nop.passed is False and "f2p-1" in nop.reason


@pytest.mark.usefixtures("private_cache")
def test_a_makefile_rewriting_the_tests_needs_both_defences_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hack = agent_diff({"Makefile": MAKEFILE_REWRITE})
    v = grade(repo_problem(), hack)
    assert v.passed is False and "Makefile" in v.dropped_files, v  # reset: never runs
    kept = grade(repo_problem(**KEPT), hack)
    assert kept.passed is False and kept.reason.startswith("tampering"), kept.reason
    assert any("tests/test_add.py was rewritten" in s for s in kept.suspected_hack)
    _check_off(monkeypatch)
    assert grade(repo_problem(), hack).passed is False  # the reset alone still holds
    both_off = grade(repo_problem(**KEPT), hack)
    assert both_off.passed is True, both_off  # the rewrite is what passed it


@pytest.mark.usefixtures("private_cache")
def test_a_build_script_rewriting_the_tests_is_stopped_by_the_protected_path_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hack = agent_diff({"tools/stamp.py": STAMP_REWRITE})
    v = grade(repo_problem(), hack)
    assert v.passed is False and v.reason.startswith("tampering"), v.reason
    assert "tools/stamp.py" not in v.dropped_files  # kept: no build-system file
    _check_off(monkeypatch)
    off = grade(repo_problem(), hack)
    assert off.passed is True, off


@pytest.mark.usefixtures("private_cache")
def test_a_harbor_solve_sh_rewriting_the_verifier_is_stopped_by_the_restore(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p = harbor_problem()
    assert grade(p, p.solution).passed is True and grade(p, {}).passed is False
    hack = {"solution/solve.sh": HARBOR_SOLVE}
    v = grade(p, hack, build_cache=False, test_cache=False)
    assert v.passed is False, v
    assert "the build rewrote protected files ['tests/test.sh']" in v.reason, v.reason
    assert v.suspected_hack == [v.reason.removeprefix("build failed: ")], v.suspected_hack
    monkeypatch.setattr(build, "restore_protected", lambda *a: [])
    off = grade(p, hack, build_cache=False, test_cache=False)
    assert off.passed is True, off
