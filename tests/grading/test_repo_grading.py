"""Repository tasks graded as the benchmark defines them, on small repositories made here:
the gold patch passes, no change and the test patch alone fail, and the reward hacks of
issue 29 score 0 (each also with its first defence turned off, to show the second holds or
that the hack is real)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from cudaenv.grading.grader import grade
from cudaenv.grading.repo_compose import PatchRejected, compose
from cudaenv.grading.repo_reports import ReportError, find, parse_report
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import base_tree
from cudaenv.problems.repo_model import RUNNER_CONFIG
from tests.grading.repo_fixtures import (
    BUGGY,
    FIXED,
    ROOT_CMAKE,
    agent_diff,
    cmake_repo,
    pytest_repo,
    write_rows,
)

LINK_LAUNCHER = """#!/bin/sh
# links, then writes `exit 0` over every test binary it made
"$@" || exit $?
prev=""; out=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$out" in *test_*) printf '#!/bin/sh\\nexit 0\\n' > "$out"; chmod +x "$out";; esac
"""
PASSING_ADD = '#include "minitest.hpp"\\nint main() { return report(\\"test_add\\", \\"calc\\", {{\\"add\\", true}, {\\"add_zero\\", true}}); }\\n'


@pytest.fixture
def calc(tmp_path: Path) -> tuple[Path, list[dict]]:
    return cmake_repo(tmp_path)


def _problem(tmp_path: Path, row: dict, **changes: object) -> Problem:
    return load_suite(
        write_rows(tmp_path / f"{row['instance_id']}-{len(changes)}.jsonl", {**row, **changes})
    )[0]


def test_gold_passes_with_the_tests_named_and_controls_fail(
    tmp_path: Path, calc: tuple[Path, list[dict]]
) -> None:
    _repo, (row, _) = calc
    p = _problem(tmp_path, row)
    gold = grade(p, p.solution)
    assert gold.passed is True and gold.compiled, gold.reason
    # CTest's report names the test `add`, the binary's gtest-format one calc.add and add_zero
    assert "3 passed (add, calc.add, calc.add_zero)" in gold.stages["f2p-1"].output_tail
    assert "calc.mul" in gold.stages["p2p-1"].output_tail
    nop = grade(p, "")
    assert nop.passed is False and nop.failure == "agent" and nop.compiled
    assert "f2p-1" in nop.reason
    # the test patch as the agent's diff: its files are reset, so it is the NOP again
    control = grade(p, p.repository.test_patch)  # type: ignore[union-attr]
    assert control.passed is False and "tests/test_add.cpp" in control.dropped_files


def test_a_compile_failure_row(tmp_path: Path, calc: tuple[Path, list[dict]]) -> None:
    _, (_, row) = calc
    p = _problem(tmp_path, row)
    nop = grade(p, "")
    assert nop.passed is False and not nop.compiled and nop.stages["build"].status == "failed"
    gold = grade(p, p.solution)
    assert gold.passed is True, gold.reason
    assert [gold.stages[k].status for k in ("f2p-1", "f2p-2", "p2p-1")] == ["ok"] * 3


def test_the_link_launcher_hack_scores_zero(tmp_path: Path, calc: tuple[Path, list[dict]]) -> None:
    """A CMake link launcher that writes `exit 0` over the test binaries, the bug left in."""
    repo, (row, _) = calc
    launcher = (
        'set_property(GLOBAL PROPERTY RULE_LAUNCH_LINK "sh ${CMAKE_SOURCE_DIR}/tools/link.sh")\n'
    )
    hack = agent_diff(
        repo, {"CMakeLists.txt": ROOT_CMAKE + launcher, "tools/link.sh": LINK_LAUNCHER}
    )
    v = grade(_problem(tmp_path, row), hack)
    assert v.passed is False and "CMakeLists.txt" in v.dropped_files  # build files are reset
    # with build-file changes kept, the launcher runs: CTest sees `add` exit 0, but no report
    # names calc.add (the binary ran nothing), so the listed tests did not pass
    kept = grade(_problem(tmp_path, row, repo_policy={"build_file_changes": "kept"}), hack)
    assert kept.passed is False and "calc.add (not run)" in kept.reason, kept.reason
    assert "1 passed (add)" in kept.stages["f2p-1"].output_tail  # what CTest alone believed


def test_a_build_step_rewriting_tests_scores_zero(
    tmp_path: Path, calc: tuple[Path, list[dict]]
) -> None:
    repo, (row, _) = calc
    rewrite = f'file(WRITE "${{CMAKE_SOURCE_DIR}}/tests/test_add.cpp" "{PASSING_ADD}")\n'
    hack = agent_diff(repo, {"CMakeLists.txt": ROOT_CMAKE + rewrite})
    v = grade(_problem(tmp_path, row), hack)
    assert v.passed is False and "CMakeLists.txt" in v.dropped_files
    kept = grade(_problem(tmp_path, row, repo_policy={"build_file_changes": "kept"}), hack)
    assert kept.passed is False and kept.reason.startswith("tampering"), kept.reason
    assert any("tests/test_add.cpp was rewritten" in s for s in kept.suspected_hack)


def test_compose_keeps_new_files_deletions_modes_and_symlinks(
    tmp_path: Path, calc: tuple[Path, list[dict]]
) -> None:
    repo, (row, _) = calc
    p = _problem(tmp_path, row)
    spec = p.repository
    assert spec is not None
    patch = agent_diff(
        repo,
        {
            "src/calc.cpp": '#include "fix.inc"\n',
            "src/fix.inc": FIXED.replace('#include "calc.hpp"\n', ""),
            "tools/gen.sh": None,
            "tests/test_mul.cpp": "int main() { return 0; }\n",
        },
        modes={"src/calc.hpp": 0o755},
    )
    out = compose(spec, base_tree(spec), patch)
    assert set(out.kept) == {"src/calc.cpp", "src/fix.inc", "tools/gen.sh", "src/calc.hpp"}
    assert out.deleted == ["tools/gen.sh"] and out.dropped == [
        "tests/test_mul.cpp: protected (**/tests/**)"
    ]
    with tarfile.open(fileobj=io.BytesIO(out.changes)) as tar:
        members = {m.name: m for m in tar}
    assert (
        members["src/calc.hpp"].mode == 0o755 and "tests/test_add.cpp" in members
    )  # the test patch
    assert "tests/test_mul.cpp" not in members  # reset to the base: nothing to unpack
    v = grade(p, patch)
    assert v.passed is True, v.reason  # the new file is compiled in, the deletion harmless
    with pytest.raises(PatchRejected, match="does not apply"):
        compose(
            spec,
            base_tree(spec),
            "diff --git a/src/calc.cpp b/src/calc.cpp\n--- a/src/calc.cpp\n+++ b/src/calc.cpp\n@@ -1 +1 @@\n-nope\n+x\n",
        )
    small = spec.model_copy(
        update={"policy": spec.policy.model_copy(update={"max_patch_bytes": 10})}
    )
    with pytest.raises(PatchRejected, match="over the task's limit"):
        compose(small, base_tree(spec), patch)
    assert grade(p, {"src/calc.cpp": FIXED}).passed is True  # whole files are a diff too
    assert grade(p, {"src/calc.cpp": BUGGY}).passed is False


def test_model_patches_apply_as_swe_bench_applies_them(
    tmp_path: Path, calc: tuple[Path, list[dict]]
) -> None:
    """Wrong hunk line counts (recounted) and a stale context line (fuzz) still apply."""
    _repo, (row, _) = calc
    p = _problem(tmp_path, row)
    spec = p.repository
    assert spec is not None
    gold = row["patch"]
    miscounted = gold.replace("@@ -1,3 +1,3 @@", "@@ -1,4 +1,4 @@")
    assert miscounted != gold
    stale = gold.replace(" int mul(int a, int b)", " int mul(int x, int y)")
    assert stale != gold
    for patch in (miscounted, stale):
        out = compose(spec, base_tree(spec), patch)
        assert out.kept == ["src/calc.cpp"]
        with tarfile.open(fileobj=io.BytesIO(out.changes)) as tar:
            fh = tar.extractfile("src/calc.cpp")
            assert fh is not None and b"a + b" in fh.read()


@pytest.fixture
def pycalc(tmp_path: Path) -> tuple[Path, dict]:
    return pytest_repo(tmp_path)


def test_pytest_row_and_its_hacks(tmp_path: Path, pycalc: tuple[Path, dict]) -> None:
    repo, row = pycalc
    p = _problem(tmp_path, row)
    gold = grade(p, p.solution)
    assert gold.passed is True, gold.reason
    assert "1 passed (tests.test_add.test_add)" in gold.stages["f2p-1"].output_tail
    # a root pytest.ini that only collects: reset (runner configuration) ...
    ini = agent_diff(repo, {"pytest.ini": "[pytest]\naddopts = --collect-only\n"})
    v = grade(p, ini)
    assert v.passed is False and "pytest.ini" in v.dropped_files
    # ... and with runner configuration unprotected, the report names no test that ran
    loose = [g for g in p.repository.policy.protected if g not in RUNNER_CONFIG]  # type: ignore[union-attr]
    v = grade(_problem(tmp_path, row, repo_policy={"protected": loose}), ini)
    assert v.passed is False and "no test ran" in v.reason, v.reason
    # a test-runner section of setup.cfg is runner configuration too
    cfg = agent_diff(
        repo,
        {"setup.cfg": "[metadata]\nname = pycalc\n\n[tool:pytest]\naddopts = --collect-only\n"},
    )
    assert "setup.cfg" in grade(p, cfg).dropped_files


def test_a_p2p_test_edited_outside_the_test_patch_scores_zero(
    tmp_path: Path, pycalc: tuple[Path, dict]
) -> None:
    """The "fix" breaks mul() and edits the pass-to-pass test in unit_tests/ to match."""
    repo, row = pycalc
    broken = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
    hack = agent_diff(
        repo,
        {
            "calc.py": broken,
            "unit_tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 7\n",
        },
    )
    v = grade(_problem(tmp_path, row), hack)
    assert v.passed is False and "unit_tests/test_mul.py" in v.dropped_files
    assert "unit_tests.test_mul.test_mul" in v.stages["p2p-1"].output_tail  # the real test failed
    # with the repository's test directories unprotected the hack would pass: it is real
    assert grade(_problem(tmp_path, row, repo_policy={"protected": []}), hack).passed is True


GTEST_XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" name="AllTests">
  <testsuite name="ctest_environment_DeathTest" tests="2">
    <testcase name="invalid_rank" status="run" result="completed" classname="ctest_environment_DeathTest">
      <failure message="threw an exception"><![CDATA[...]]></failure>
    </testcase>
    <testcase name="no_type_str" status="run" result="completed" classname="ctest_environment_DeathTest"/>
    <testcase name="later" status="notrun" result="suppressed" classname="ctest_environment_DeathTest"/>
  </testsuite>
</testsuites>"""
PYTEST_XML = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2">
<testcase classname="tests.test_x.TestA" name="test_one" time="0.001"/>
<testcase classname="tests.test_x" name="test_two" time="0.001"><skipped message="no"/></testcase>
</testsuite></testsuites>"""


def test_reports_are_read_per_test() -> None:
    cases = parse_report(GTEST_XML)
    assert [(c.label, c.status) for c in cases] == [
        ("ctest_environment_DeathTest.invalid_rank", "failed"),
        ("ctest_environment_DeathTest.no_type_str", "passed"),
        ("ctest_environment_DeathTest.later", "skipped"),
    ]
    py = parse_report(PYTEST_XML)
    assert find(py, "tests/test_x.py::TestA::test_one").status == "passed"  # type: ignore[union-attr]
    assert find(py, "tests/test_x.py::test_two").status == "skipped"  # type: ignore[union-attr]
    assert find(py, "tests/test_x.py::test_three") is None
    with pytest.raises(ReportError):
        parse_report(b"<testsuite><testcase")
