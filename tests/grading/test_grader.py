"""The grader end to end on CPU-runnable problems (real g++ / nvcc, real sandboxes)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading.build_cache import BuildCache
from cudaenv.problems import load_suite
from cudaenv.toolkit import has_gpu
from tests.conftest import CPU_SOLUTION, write_problem


@pytest.fixture
def problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def test_reference_passes_with_completion_proof(problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION})
    assert v.passed is True and v.compiled
    assert [*v.stages] == ["static", "build", "toolchain", "test"]
    assert all(s.status == "ok" for s in v.stages.values())
    assert (
        "<token>" in v.stages["test"].output_tail
    )  # the token itself never leaks into the verdict
    json.loads(v.model_dump_json())


def test_wrong_answer_fails(problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION.replace("a + b", "a - b")})
    assert v.passed is False and v.compiled and v.stages["test"].status == "failed"
    assert v.failure == "agent"


def test_build_error(problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": "int add(int a, int b) { return a + ; }"})
    assert v.compiled is False and v.passed is False
    assert v.stages["build"].status == "failed" and "error" in v.stages["build"].output_tail


def test_empty_and_protected_only(problem) -> None:
    v = cudaenv.grade(problem, {})
    assert v.passed is False and "empty solution" in v.reason
    v = cudaenv.grade(
        problem, {"test/test_main.cpp": "int main(){return 0;}", "include/add.h": "x"}
    )
    assert v.passed is False and "only protected" in v.reason
    assert v.dropped_files == ["include/add.h", "test/test_main.cpp"]


def test_protected_files_dropped_and_pristine_used(problem) -> None:
    """Replacing the harness with one that always passes changes nothing."""
    files = {
        "solution.cpp": CPU_SOLUTION.replace("a + b", "a - b"),
        "test/test_main.cpp": "int main(){return 0;}",
        "test/extra.cpp": "int helper(){return 0;}",
    }
    v = cudaenv.grade(problem, files)
    assert v.passed is False
    assert v.dropped_files == ["test/extra.cpp", "test/test_main.cpp"]


def test_early_exit_without_completion_proof_fails(problem) -> None:
    """A solution that ends the process with status 0 before the checks cannot pass."""
    sneaky = '#include "add.h"\n#include <cstdlib>\nstruct X { X() { std::exit(0); } } x;\nint add(int a, int b){return 0;}\n'
    v = cudaenv.grade(problem, {"solution.cpp": sneaky})
    assert v.passed is False
    # the static check (exit with a success status) stops it before the completion proof would
    assert "exit(0)" in v.reason and v.suspected_hack


def test_forbidden_construct_flagged(problem) -> None:
    bad = '#include "add.h"\n#include <cstdlib>\nint add(int a, int b){ return getenv("X") ? a + b : a + b; }\n'
    v = cudaenv.grade(problem, {"solution.cpp": bad})
    assert v.passed is False and v.suspected_hack and "getenv" in v.suspected_hack[0]


@pytest.mark.timeout(600)  # a hang guard: the sleep below would outlast any CI run
def test_timeout_stage(tmp_path: Path) -> None:
    """A test command past the problem's ``timeout_seconds`` is killed: the stage says timeout
    (no exit code: killed, not exited), and the grade returns while the sleep it ran would
    still have more than a day to go; nothing of it is left on the host."""
    d = write_problem(
        tmp_path,
        "slow",
        spec={
            "build_command": None,
            "test_command": "bash solution.sh",
            "timeout_seconds": 1,
            "metadata": {"requires_gpu": False},
        },
        files={"test/readme.txt": "x"},
    )
    p = load_suite(d)["slow"]
    name = f"cudaenv-slow-{uuid.uuid4().hex[:12]}"
    v = cudaenv.grade(p, {"solution.sh": f"exec -a {name} sleep 100000"})
    test = v.stages["test"]
    assert (test.status, test.exit_code, test.reason) == ("timeout", None, "timed out after 1s")
    assert v.passed is False
    assert subprocess.run(["pgrep", "-f", f"^{name}"], capture_output=True).stdout == b""


def test_flood_output_is_capped(tmp_path: Path) -> None:
    d = write_problem(
        tmp_path,
        "flood",
        spec={
            "build_command": None,
            "test_command": "bash solution.sh",
            "metadata": {"requires_gpu": False},
        },
        files={"test/readme.txt": "x"},
    )
    v = cudaenv.grade(
        load_suite(d)["flood"], {"solution.sh": "head -c 50000000 /dev/zero | tr '\\0' 'a'; exit 3"}
    )
    assert v.stages["test"].status == "failed" and len(v.stages["test"].output_tail) <= 4000


def test_build_cache_hits_second_time(problem) -> None:
    unique = CPU_SOLUTION + "// cache probe " + str(id(problem)) + "\n"
    first = cudaenv.grade(problem, {"solution.cpp": unique})
    second = cudaenv.grade(problem, {"solution.cpp": unique})
    assert first.passed and second.passed
    assert not first.stages["build"].cached and second.stages["build"].cached


def test_source_references_checked_with_tree_sitter(tmp_path: Path) -> None:
    d = write_problem(
        tmp_path,
        "refs",
        spec={
            "build_command": "g++ -O0 -I include -o test.out solution.cpp test/test_main.cpp",
            "source_references": {"all": ["std::accumulate"]},
            "metadata": {"requires_gpu": False},
        },
        files={
            "context/include/add.h": "int add(int a, int b);\n",
            "test/test_main.cpp": '#include "add.h"\nint main(){ return add(2,3) == 5 ? 0 : 1; }\n',
        },
    )
    p = load_suite(d)["refs"]
    in_comment = '#include "add.h"\n// std::accumulate would be nice\nint add(int a, int b){ return a + b; }\n'
    v = cudaenv.grade(p, {"solution.cpp": in_comment})
    assert v.passed is False and v.stages["source_refs"].status == "failed"
    real = '#include "add.h"\n#include <numeric>\nint add(int a, int b){ int v[2]={a,b}; return std::accumulate(v, v+2, 0); }\n'
    v = cudaenv.grade(p, {"solution.cpp": real})
    assert v.passed is True and v.stages["source_refs"].status == "ok"


@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU path")
def test_cuda_problem_without_gpu_is_skipped_not_failed() -> None:
    p = next(
        p
        for p in load_suite("builtin")
        if p.problem_type == "cuda_cpp" and p.group == "cuda-kernels"
    )
    v = cudaenv.grade(p, p.solution)
    assert v.compiled is True
    assert (
        v.passed is None
        and v.stages["test"].status == "skipped"
        and v.stages["test"].reason == "no GPU"
    )
    assert v.failure is None


def test_cuda_python_runs_on_simulator() -> None:
    suite = load_suite("builtin").filter(problem_type="cuda_python")
    if not len(suite):
        pytest.skip("no cuda_python problems bundled")
    p = suite[0]
    v = cudaenv.grade(p, p.solution)
    assert v.passed is True, v.reason + v.stages["test"].output_tail
    if not has_gpu():
        assert "simulator" in (v.stages["test"].reason or "")


def test_benchmark_skipped_without_gpu_or_command(problem) -> None:
    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, benchmark=True)
    assert v.stages["benchmark"].status == "skipped"
    assert v.passed is True and v.speedup is None


def test_sandbox_failure_is_infrastructure(problem) -> None:
    def broken():
        raise cudaenv.errors.SandboxError("engine went away")

    v = cudaenv.grade(problem, {"solution.cpp": CPU_SOLUTION}, sandbox=broken)
    assert v.failure == "infrastructure" and v.passed is None and "engine went away" in v.reason


def test_build_cache_keys_differ_on_command(tmp_path: Path) -> None:
    from cudaenv.grading.build_cache import build_key
    from cudaenv.problems.model import SourceFile

    f = [SourceFile(path="a.cu", content="x")]
    assert build_key(f, "nvcc a", "cuda_cpp") != build_key(f, "nvcc b", "cuda_cpp")
    assert build_key(f, "nvcc a", "cuda_cpp") == build_key(list(f), "nvcc a", "cuda_cpp")
    assert BuildCache(tmp_path).get("missing") is None


def test_test_stage_cached_for_identical_inputs(problem) -> None:
    unique = CPU_SOLUTION + f"// test cache probe {id(problem)}\n"
    first = cudaenv.grade(problem, {"solution.cpp": unique})
    second = cudaenv.grade(problem, {"solution.cpp": unique})
    fresh = cudaenv.grade(problem, {"solution.cpp": unique}, test_cache=False)
    assert first.passed and second.passed and fresh.passed
    assert not first.stages["test"].cached
    assert second.stages["test"].cached
    assert not fresh.stages["test"].cached
    wrong = unique.replace("a + b", "a - b")
    assert cudaenv.grade(problem, {"solution.cpp": wrong}).passed is False
    again = cudaenv.grade(problem, {"solution.cpp": wrong})
    assert again.passed is False and again.stages["test"].cached


def test_scratch_files_are_left_out_but_included_helpers_are_graded(problem) -> None:
    """Agents leave scratch files; only what the build can reach is graded (and checked)."""
    files = {
        "solution.cpp": '#include "add.h"\n#include "detail.h"\nint add(int a, int b) { return plus(a, b); }\n',
        "detail.h": "static inline int plus(int a, int b) { return a + b; }\n",
        "scratch/try.cpp": '#include <cstdlib>\nint main() { return getenv("X") != nullptr; }\n',
        "notes.txt": "things I tried",
    }
    v = cudaenv.grade(problem, files)
    assert v.passed is True, v.reason
    assert v.unused_files == ["notes.txt", "scratch/try.cpp"]
    assert not v.suspected_hack
    broken_helper = {
        **files,
        "detail.h": "static inline int plus(int a, int b) { return a - b; }\n",
    }
    assert cudaenv.grade(problem, broken_helper).passed is False


def test_python_scratch_module_not_graded_but_imported_module_is() -> None:
    p = load_suite("builtin")["py-vector-add"]
    ref = p.solution.files[0].content
    v = cudaenv.grade(p, {"solution.py": ref, "explore.py": "import os\nprint(os.environ)\n"})
    assert v.passed is True and v.unused_files == ["explore.py"]
    sneaky = {"solution.py": "from helper import *\n", "helper.py": "import os\n" + ref}
    v = cudaenv.grade(p, sneaky)
    assert v.passed is False and any("os" in s for s in v.suspected_hack)
