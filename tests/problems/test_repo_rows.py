"""Repository-task rows load as ``repository`` problems; their base checkout is the commit,
squashed, with modes and symlinks kept."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.loader import load_suite
from cudaenv.problems.repo_base import base_tree
from cudaenv.problems.repo_model import RepoSpec, check_kind, glob_match
from tests.grading.repo_fixtures import cmake_repo, write_rows


@pytest.fixture
def rows(tmp_path: Path) -> tuple[Path, list[dict]]:
    _repo, rows = cmake_repo(tmp_path)
    return write_rows(tmp_path / "tasks.jsonl", *rows), rows


def test_a_row_is_a_repository_problem(rows: tuple[Path, list[dict]]) -> None:
    path, raw = rows
    p = load_suite(path)["demo__calc-1"]
    spec = p.repository
    assert p.problem_type == "repository" and spec is not None
    assert p.context_files == [] and p.test_files == []  # the repository is not context files
    assert spec.base_commit == raw[0]["base_commit"] and Path(spec.source).is_dir()
    assert [c.kind for c in spec.f2p] == ["test"] and spec.fail_to_pass == [
        "calc.add",
        "calc.add_zero",
    ]
    assert spec.failure_stage == "runtime"
    assert (
        p.solution is not None
        and p.solution.type == "patch"
        and "a + b" in (p.solution.patch or "")
    )
    # the gold patch is hidden: not in the record a datapack or `cudaenv show` prints
    assert "a + b" not in json.dumps(p.to_record())
    assert load_suite(path)["demo__calc-2"].repository.failure_stage == "compile"  # type: ignore[union-attr]
    # the test patch's files are protected, so is the build directory
    assert spec.protected_rule("tests/test_add.cpp") is not None
    assert spec.protected_rule("build/CMakeCache.txt") is not None
    assert spec.protected_rule("src/calc.cpp") is None


def test_rows_are_checked_when_loaded(tmp_path: Path, rows: tuple[Path, list[dict]]) -> None:
    _, raw = rows
    bad = dict(raw[0])
    bad["test_patch"] = (
        "diff --git a/src/calc.cpp b/src/calc.cpp\n--- a/src/calc.cpp\n+++ b/src/calc.cpp\n@@ -1 +1 @@\n-nope\n+x\n"
    )
    with pytest.raises(SpecError, match="test_patch does not apply"):
        load_suite(write_rows(tmp_path / "bad.jsonl", bad))
    with pytest.raises(SpecError, match="base_commit"):
        load_suite(write_rows(tmp_path / "commit.jsonl", dict(raw[0], base_commit="0" * 40)))
    with pytest.raises(SourceNotFoundError, match="no local clone"):
        load_suite(write_rows(tmp_path / "clone.jsonl", dict(raw[0], repo_path="nowhere")))
    stage = dict(raw[0], metadata={"failure_stage": "sometimes"})
    with pytest.raises(SpecError, match="failure stage"):
        load_suite(write_rows(tmp_path / "stage.jsonl", stage))
    none = {k: v for k, v in raw[0].items() if k not in ("f2p_commands",)}
    with pytest.raises(SpecError, match="f2p_commands"):
        load_suite(write_rows(tmp_path / "none.jsonl", none))


def test_swe_bench_fields_are_accepted(tmp_path: Path, rows: tuple[Path, list[dict]]) -> None:
    """JSON-encoded id lists, lowercase twins, a test_command with ids, build_targets."""
    _, raw = rows
    row = {
        k: v
        for k, v in raw[0].items()
        if k not in ("f2p_commands", "p2p_commands", "build_command")
    }
    row["FAIL_TO_PASS"] = json.dumps(["add"])
    row.pop("PASS_TO_PASS")
    row["pass_to_pass"] = ["mul"]
    row["test_command"] = "ctest --test-dir build -R"
    row["build_targets"] = ["test_mul", "test_add"]
    spec = load_suite(write_rows(tmp_path / "swe.jsonl", row))[0].repository
    assert spec is not None and spec.fail_to_pass == ["add"] and spec.pass_to_pass == ["mul"]
    assert spec.f2p[0].command == "ctest --test-dir build -R add"
    assert spec.build_command == "cmake --build build --target test_mul test_add"


def test_the_base_checkout_is_one_commit_with_modes_and_symlinks(
    rows: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    path, _ = rows
    spec = load_suite(path)[0].repository
    assert spec is not None
    base = base_tree(spec)
    assert base_tree(spec) == base  # made once, then read from the cache
    dest = tmp_path / "checkout"
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(base.checkout_tar.read_bytes())) as tar:
        tar.extractall(dest, filter="tar")
    log = subprocess.run(
        ["git", "-C", str(dest), "log", "--format=%H %s"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (
        len(log.stdout.splitlines()) == 1 and spec.base_commit[:12] in log.stdout
    )  # history squashed
    status = subprocess.run(
        ["git", "-C", str(dest), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""  # git status works and the checkout is clean
    assert (dest / "tools/gen.sh").stat().st_mode & 0o111  # the executable bit kept
    assert (dest / "src/calc.h").is_symlink() and (dest / "src/calc.h").read_text().startswith(
        "int add"
    )
    assert not (dest / "tests/test_add.cpp").exists()  # the held-out tests are not there


def test_check_kinds_and_globs() -> None:
    assert check_kind("cmake --build build --target x") == "build"
    assert check_kind("cd build && ninja foo.o") == "build"
    assert check_kind("ctest --test-dir build") == "test"
    assert check_kind("cmake --build build && ./x") == "test"
    assert glob_match("core/unit_test/TestArray.cpp", ["**/unit_test/**"])
    assert glob_match("pytest.ini", ["**/pytest.ini"]) and glob_match(
        "a/b/conftest.py", ["**/conftest.py"]
    )
    assert not glob_match("src/attest.cpp", ["**/test/**", "**/tests/**"])
    assert glob_match(".github/workflows/ci.yml", [".github/**"])
    spec = RepoSpec(
        repo="r",
        source="/x",
        base_commit="abcd",
        test_patch="x",
        editable_build_files=["src/CMakeLists.txt"],
    )
    assert (
        spec.protected_rule("CMakeLists.txt") and spec.protected_rule("src/CMakeLists.txt") is None
    )
