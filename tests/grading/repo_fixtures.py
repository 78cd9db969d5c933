"""Small git repositories made on the fly, with SWE-bench-style rows: a CMake + CTest project
whose test binaries write gtest-format XML (a few lines of our own, as gtest does when
``GTEST_OUTPUT`` asks), and a pytest project."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}

# a test "framework" of our own: named checks, and a gtest-format report where GTEST_OUTPUT
# asks for one (xml:DIR/ -> DIR/<binary>.xml), as gtest writes it
MINITEST = r"""#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
struct Case { const char* name; bool ok; };
inline int report(const char* binary, const char* suite, const std::vector<Case>& cases) {
    const char* out = std::getenv("GTEST_OUTPUT");
    int failed = 0;
    for (const auto& c : cases) failed += !c.ok;
    if (out && std::strncmp(out, "xml:", 4) == 0) {
        std::string path = out + 4;
        if (!path.empty() && path.back() == '/') path += std::string(binary) + ".xml";
        if (FILE* f = std::fopen(path.c_str(), "w")) {
            std::fprintf(f, "<?xml version=\"1.0\"?>\n<testsuites tests=\"%zu\">\n"
                            "<testsuite name=\"%s\">\n", cases.size(), suite);
            for (const auto& c : cases) {
                std::fprintf(f, "<testcase name=\"%s\" classname=\"%s\" status=\"run\">%s"
                                "</testcase>\n", c.name, suite, c.ok ? "" : "<failure message=\"x\"/>");
            }
            std::fprintf(f, "</testsuite>\n</testsuites>\n");
            std::fclose(f);
        }
    }
    return failed ? 1 : 0;
}
"""

ROOT_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(calc CXX)
enable_testing()
add_library(calc src/calc.cpp)
target_include_directories(calc PUBLIC src)
add_subdirectory(tests)
"""
TESTS_CMAKE = """add_executable(test_mul test_mul.cpp)
target_link_libraries(test_mul calc)
add_test(NAME mul COMMAND test_mul)
"""
ADD_CMAKE = """add_executable(test_add test_add.cpp)
target_link_libraries(test_add calc)
add_test(NAME add COMMAND test_add)
"""
SUB_CMAKE = """add_executable(test_sub test_sub.cpp)
target_link_libraries(test_sub calc)
add_test(NAME sub COMMAND test_sub)
"""
HEADER = "int add(int a, int b);\nint mul(int a, int b);\n"
BUGGY = '#include "calc.hpp"\nint add(int a, int b) { return a - b; }\nint mul(int a, int b) { return a * b; }\n'
FIXED = BUGGY.replace("a - b", "a + b")
TEST_MUL = '#include "calc.hpp"\n#include "minitest.hpp"\nint main() { return report("test_mul", "calc", {{"mul", mul(3, 4) == 12}}); }\n'
TEST_ADD = '#include "calc.hpp"\n#include "minitest.hpp"\nint main() { return report("test_add", "calc", {{"add", add(2, 3) == 5}, {"add_zero", add(0, 0) == 0}}); }\n'
TEST_SUB = '#include "calc.hpp"\n#include "minitest.hpp"\nint sub(int, int);\nint main() { return report("test_sub", "calc", {{"sub", sub(5, 3) == 2}}); }\n'
GEN = "#!/bin/sh\necho generated\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout


def write(repo: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def diff(repo: Path, files: dict[str, str | None], modes: dict[str, int] | None = None) -> str:
    """The git diff that makes ``files`` (None: delete) and ``modes`` on the committed tree;
    the tree is left clean."""
    write(repo, files)
    for rel, mode in (modes or {}).items():
        (repo / rel).chmod(mode)
    git(repo, "add", "-A")
    out = git(repo, "diff", "--cached", "--binary")
    git(repo, "reset", "-q", "--hard", "HEAD")
    git(repo, "clean", "-qfdx")
    return out


def _init(repo: Path, files: dict[str, str | None]) -> str:
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    write(repo, files)
    return repo.name


def cmake_repo(root: Path) -> tuple[Path, list[dict]]:
    """The CMake + CTest project and two rows: a runtime failure (``add`` subtracts) and a
    compile failure (``sub`` does not exist)."""
    repo = root / "calc"
    _init(
        repo,
        {
            "CMakeLists.txt": ROOT_CMAKE,
            "src/calc.hpp": HEADER,
            "src/calc.cpp": BUGGY,
            "tests/CMakeLists.txt": TESTS_CMAKE,
            "tests/minitest.hpp": MINITEST,
            "tests/test_mul.cpp": TEST_MUL,
            "tools/gen.sh": GEN,
            ".gitignore": "/scratch/\n",
        },
    )
    (repo / "tools/gen.sh").chmod(0o755)
    (repo / "src/calc.h").symlink_to("calc.hpp")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    common = {
        "repo": "demo/calc",
        "repo_path": "calc",
        "base_commit": base,
        "configure_command": "cmake -S . -B build -G Ninja",
        "build_command": "cmake --build build",
        "p2p_commands": ["ctest --test-dir build -R '^mul$'"],
        "PASS_TO_PASS": ["calc.mul"],
    }
    runtime = {
        **common,
        "instance_id": "demo__calc-1",
        "problem_statement": "add() subtracts instead of adding.",
        "patch": diff(repo, {"src/calc.cpp": FIXED}),
        "test_patch": diff(
            repo, {"tests/CMakeLists.txt": TESTS_CMAKE + ADD_CMAKE, "tests/test_add.cpp": TEST_ADD}
        ),
        "f2p_commands": ["ctest --test-dir build -R '^add$'"],
        "FAIL_TO_PASS": ["calc.add", "calc.add_zero"],
        "metadata": {"failure_stage": "runtime"},
    }
    compile_row = {
        **common,
        "instance_id": "demo__calc-2",
        "problem_statement": "There is no sub(a, b) returning a - b.",
        "patch": diff(repo, {"src/calc.cpp": BUGGY + "int sub(int a, int b) { return a - b; }\n"}),
        "test_patch": diff(
            repo, {"tests/CMakeLists.txt": TESTS_CMAKE + SUB_CMAKE, "tests/test_sub.cpp": TEST_SUB}
        ),
        "f2p_commands": ["cmake --build build --target test_sub", "build/tests/test_sub"],
        "FAIL_TO_PASS": ["calc.sub"],
        "metadata": {"failure_stage": "compile"},
    }
    return repo, [runtime, compile_row]


PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"
PY_CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
PY_TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"
PY_TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def pytest_repo(root: Path) -> tuple[Path, dict]:
    """A pytest project: the held-out test in ``tests/``, the pass-to-pass one in
    ``unit_tests/`` (a directory the test patch does not touch)."""
    repo = root / "pycalc"
    _init(
        repo,
        {
            "calc.py": PY_CALC,
            "unit_tests/test_mul.py": PY_TEST_MUL,
            "setup.cfg": "[metadata]\nname = pycalc\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    row = {
        "repo": "demo/pycalc",
        "repo_path": "pycalc",
        "instance_id": "demo__pycalc-1",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "add() subtracts instead of adding.",
        "patch": diff(repo, {"calc.py": PY_CALC.replace("a - b", "a + b")}),
        "test_patch": diff(repo, {"tests/test_add.py": PY_TEST_ADD}),
        # no plugins of this machine's Python (loading them costs seconds per run)
        "f2p_commands": [f"{PYTEST} tests/test_add.py"],
        "p2p_commands": [f"{PYTEST} unit_tests/test_mul.py"],
        "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
        "PASS_TO_PASS": ["unit_tests/test_mul.py::test_mul"],
        "metadata": {"failure_stage": "runtime"},
    }
    return repo, row


def write_rows(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def agent_diff(
    repo: Path, files: dict[str, str | None], modes: dict[str, int] | None = None
) -> str:
    """What an agent's workspace diff would be (same as :func:`diff`)."""
    return diff(repo, files, modes)
