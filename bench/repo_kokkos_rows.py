"""Build SWE-kokkos-bench-style repository-task rows from real merged kokkos/kokkos pull
requests, out of a local clone or mirror (no network). The rows are written where you say,
never into this repository.

    python bench/repo_kokkos_rows.py --repo /path/to/kokkos.git --out rows/kokkos.jsonl

Each row's base is the merge's first parent; the pull request's diff is split into the test
patch (its ``unit_test`` paths) and the production patch (the rest). The problem statements
are our own descriptions of the bugs. Serial backend, CPU only, Release, Ninja; the build
targets are only what the checks need (one object file, or one test binary and the library).

- kokkos__kokkos-7293 (compile failure): ``Kokkos::Array`` in range-based for loops.
- kokkos__kokkos-7327 (runtime failure): a malformed CTest resource allocation must abort.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CONFIGURE = (
    "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "
    "-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_TESTS=ON"
)
COMPILE_ONLY = "core/unit_test/CMakeFiles/Kokkos_CoreTestCompileOnly.dir"
CTEST_DEVICE = "build/core/unit_test/Kokkos_CoreUnitTest_CTestDevice"

PULLS = [
    {
        "instance_id": "kokkos__kokkos-7293",
        "commit": "383ecf6a9",
        "problem_statement": (
            "`Kokkos::Array<T, N>` cannot be iterated with a range-based for loop: "
            "`for (auto& e : a)` does not compile because no `begin`/`end` are found for it. "
            "Provide `begin` and `end` for `Kokkos::Array` (const and non-const), usable in host "
            "and device code and in constant expressions, zero-sized arrays included."
        ),
        "build_targets": [
            f"{COMPILE_ONLY}/TestArray.cpp.o",
            f"{COMPILE_ONLY}/TestBitManipulation.cpp.o",
        ],
        "f2p_commands": [f"cmake --build build --target {COMPILE_ONLY}/TestArray.cpp.o"],
        "p2p_commands": [f"cmake --build build --target {COMPILE_ONLY}/TestBitManipulation.cpp.o"],
        "FAIL_TO_PASS": [],
        "PASS_TO_PASS": [],
        "failure_stage": "compile",
        "tags": ["kokkos", "core", "compile-only"],
    },
    {
        "instance_id": "kokkos__kokkos-7327",
        "commit": "881f15b61",
        "problem_statement": (
            "When the CTest resource allocation that Kokkos reads (`CTEST_RESOURCE_GROUP_*`, "
            "`CTEST_KOKKOS_DEVICE_TYPE`) is malformed or does not fit the local rank, "
            "`Kokkos::Impl::get_ctest_gpu` throws a `std::runtime_error`. Such a configuration "
            "error cannot be recovered from: the function should abort the program with the "
            "same error message instead of throwing."
        ),
        "build_targets": ["Kokkos_CoreUnitTest_CTestDevice"],
        "f2p_commands": [f"{CTEST_DEVICE} --gtest_filter='ctest_environment_DeathTest.*'"],
        "p2p_commands": [f"{CTEST_DEVICE} --gtest_filter='ctest_environment.*'"],
        "FAIL_TO_PASS": [
            f"ctest_environment_DeathTest.{n}"
            for n in ("invalid_rank", "no_type_str", "missing_type", "no_id_str", "invalid_id_str")
        ],
        "PASS_TO_PASS": [
            "ctest_environment.no_device_type",
            "ctest_environment.no_process_count",
            "ctest_environment.good",
        ],
        "failure_stage": "runtime",
        "tags": ["kokkos", "core", "serial"],
    },
]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def row(repo: Path, pull: dict) -> dict:
    commit = git(repo, "rev-parse", f"{pull['commit']}^{{commit}}").strip()
    base = git(repo, "rev-parse", f"{commit}^1").strip()
    files = git(repo, "diff", "--name-only", base, commit).split()
    tests = [f for f in files if "unit_test" in f.split("/")[1:2] or "/unit_test/" in f]
    code = [f for f in files if f not in tests]
    return {
        "repo": "kokkos/kokkos",
        "repo_path": str(repo),
        "instance_id": pull["instance_id"],
        "base_commit": base,
        "problem_statement": pull["problem_statement"],
        "patch": git(repo, "diff", base, commit, "--", *code),
        "test_patch": git(repo, "diff", base, commit, "--", *tests),
        "configure_command": CONFIGURE,
        "build_targets": pull["build_targets"],
        "f2p_commands": pull["f2p_commands"],
        "p2p_commands": pull["p2p_commands"],
        "FAIL_TO_PASS": pull["FAIL_TO_PASS"],
        "PASS_TO_PASS": pull["PASS_TO_PASS"],
        "changed_files": code,
        "metadata": {"failure_stage": pull["failure_stage"], "tags": pull["tags"], "pull": commit},
        "timeout_seconds": 2400,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, required=True, help="a kokkos/kokkos clone or mirror")
    ap.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    repo = repo / ".git" if (repo / ".git").exists() else repo
    rows = [row(repo, p) for p in PULLS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for r in rows:
        print(
            f"{r['instance_id']}: base {r['base_commit'][:12]}, {len(r['changed_files'])} code file(s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
