"""A repository task as data: the repository at a base commit, the held-out test patch, and
the checks that decide a fix (SWE-bench style rows such as SWE-kokkos-bench).

Why its own model: a repository task is not a set of context files plus a solution file. The
agent works in a git checkout of the whole repository, its solution is a diff, and grading is
the benchmark's own recipe (clean checkout, the agent's diff, protected paths reset, the test
patch, configure, build, fail-to-pass and pass-to-pass checks). What may change and what is
restored is a :class:`RepoPolicy`, stored with the task.

Path rules are globs over repository-relative POSIX paths: ``*`` and ``?`` stay inside one
path component, ``**/`` matches any number of leading directories (none included) and a
trailing ``/**`` everything below a directory.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CheckKind = Literal["build", "test"]
FailureStage = Literal["compile", "runtime"]
BuildFileRule = Literal["reset", "production_patch", "kept"]

#: the repository's test code and the test frameworks it vendors
TEST_DIRS = (
    "**/test/**",
    "**/tests/**",
    "**/unit_test/**",
    "**/unit_tests/**",
    "**/testing/**",
    "**/googletest/**",
    "**/gtest/**",
)
#: test-runner configuration (the test sections of setup.cfg / pyproject.toml are handled apart)
RUNNER_CONFIG = (
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/conftest.py",
    "**/tox.ini",
    "**/noxfile.py",
    "**/CTestTestfile.cmake",
    "**/CTestConfig.cmake",
    "**/CTestCustom.cmake",
    "**/CTestCustom.cmake.in",
)
CI_CONFIG = (
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".circleci/**",
    ".travis.yml",
    ".jenkins/**",
    "**/Jenkinsfile",
    "azure-pipelines.yml",
    "appveyor.yml",
    ".buildkite/**",
)
#: files that decide how the repository is configured and built (CTest registration included)
BUILD_FILES = (
    "**/CMakeLists.txt",
    "**/*.cmake",
    "**/*.cmake.in",
    "**/CMakePresets.json",
    "**/CMakeUserPresets.json",
    "**/Makefile*",
    "**/makefile",
    "**/GNUmakefile",
    "**/*.mk",
    "**/meson.build",
    "**/meson_options.txt",
    "**/configure",
    "**/configure.ac",
    "**/*.am",
    "**/setup.py",
    "**/BUILD",
    "**/BUILD.bazel",
    "**/WORKSPACE",
    "**/*.bzl",
)


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out += "/.*"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def glob_match(path: str, patterns: tuple[str, ...] | list[str]) -> str | None:
    """The first of ``patterns`` that ``path`` matches (see the module docstring), or None."""
    return next((p for p in patterns if _glob_regex(p).match(path)), None)


class RepoPolicy(BaseModel):
    """What grading restores from the base commit and what it keeps of the agent's diff.

    ``protected``: reset to their base version (a file the agent added there is removed).
    ``build_files``: build-system files, reset unless ``build_file_changes`` keeps them:
    ``reset`` (never kept), ``production_patch`` (kept for the files the task's production
    patch changes: the fix needs them; the default), ``kept`` (always kept). A kept build-file
    change makes the grader's configure and build run code the agent wrote, so that build
    gets no shared compiler cache.
    """

    model_config = ConfigDict(extra="forbid")

    protected: list[str] = Field(default_factory=lambda: [*TEST_DIRS, *RUNNER_CONFIG, *CI_CONFIG])
    build_files: list[str] = Field(default_factory=lambda: list(BUILD_FILES))
    build_file_changes: BuildFileRule = "production_patch"
    #: setup.cfg / pyproject.toml sections that configure a test runner: a change there
    #: restores the whole file
    runner_sections: list[str] = Field(
        default_factory=lambda: ["tool:pytest", "pytest", "tool.pytest", "tool.pytest.ini_options"]
    )
    max_patch_bytes: int = Field(default=16 << 20, gt=0)


class RepoCheck(BaseModel):
    """One fail-to-pass or pass-to-pass command, run from the repository root.

    ``build``: it passes when it exits 0 (a compile of a target). ``test``: it must exit 0
    and its test framework's report (gtest XML, CTest or pytest JUnit) must name at least one
    test that ran, and none that failed.
    """

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1)
    kind: CheckKind


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff reads or writes (old and new sides, renames included)."""
    paths: list[str] = []
    for line in patch.splitlines():
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        found = list(m.groups()) if m else []
        for prefix, strip in (
            ("--- ", "a/"),
            ("+++ ", "b/"),
            ("rename from ", ""),
            ("rename to ", ""),
        ):
            if line.startswith(prefix):
                name = line[len(prefix) :].split("\t")[0].strip()
                if name != "/dev/null":
                    found.append(name.removeprefix(strip) if strip else name)
        for p in found:
            if p not in paths:
                paths.append(p)
    return paths


def check_kind(command: str) -> CheckKind:
    """``build`` for one command that builds (``cmake --build``, ``ninja``, ``make``, after an
    optional ``cd DIR &&``), else ``test``: the kind a row's bare command gets."""
    body = re.sub(r"^\s*cd\s+\S+\s*&&\s*", "", command)
    if re.search(r"[;&|]", body):
        return "test"
    return "build" if re.match(r"\s*(?:cmake\s+--build|ninja|make|gmake)\b", body) else "test"


class RepoSpec(BaseModel):
    """The repository side of a ``repository`` Problem (the gold patch is the Problem's hidden
    ``solution``, never part of this record)."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(min_length=1, description="owner/name, for display")
    source: str = Field(min_length=1, description="a local git repository holding base_commit")
    base_commit: str = Field(min_length=4)
    test_patch: str = Field(min_length=1)
    configure_command: str | None = None
    build_command: str | None = None
    build_dir: str = "build"
    build_targets: list[str] = Field(default_factory=list)
    f2p: list[RepoCheck] = Field(default_factory=list)
    p2p: list[RepoCheck] = Field(default_factory=list)
    fail_to_pass: list[str] = Field(default_factory=list, description="test ids")
    pass_to_pass: list[str] = Field(default_factory=list, description="test ids")
    failure_stage: FailureStage | None = Field(
        default=None, description="where the test patch alone fails: compile or runtime"
    )
    editable_build_files: list[str] = Field(
        default_factory=list, description="build files the agent's diff may change"
    )
    policy: RepoPolicy = Field(default_factory=RepoPolicy)
    timeout_s: float = Field(default=1800.0, gt=0)

    @field_validator("build_dir")
    @classmethod
    def _relative_dir(cls, v: str) -> str:
        from cudaenv.problems.paths import check_relative_path

        return check_relative_path(v, field="build_dir")

    @functools.cached_property
    def test_patch_paths(self) -> frozenset[str]:
        return frozenset(patch_paths(self.test_patch))

    def protected_rule(self, path: str) -> str | None:
        """Why ``path`` is reset to its base version in grading, or None when the agent's
        version is kept."""
        if path in self.test_patch_paths:
            return "a file of the held-out test patch"
        if glob := glob_match(path, self.policy.protected):
            return f"protected ({glob})"
        if path.startswith(self.build_dir + "/"):
            return "inside the build directory"
        if glob := glob_match(path, self.policy.build_files):
            rule = self.policy.build_file_changes
            if rule == "kept" or (rule == "production_patch" and path in self.editable_build_files):
                return None
            return f"build-system file ({glob}; rule {rule})"
        return None

    def is_build_file(self, path: str) -> bool:
        return glob_match(path, self.policy.build_files) is not None


__all__ = [
    "BUILD_FILES",
    "CI_CONFIG",
    "RUNNER_CONFIG",
    "TEST_DIRS",
    "RepoCheck",
    "RepoPolicy",
    "RepoSpec",
    "check_kind",
    "glob_match",
    "patch_paths",
]
