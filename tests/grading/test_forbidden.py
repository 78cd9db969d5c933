"""What a problem forbids (``metadata.forbidden_references``): a kernel problem's "write the
kernels yourself, no libraries" is enforced, in code only (never comments or strings), and
without flagging names that merely look alike."""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.errors import SpecError
from cudaenv.grading.static_checks import analyse
from cudaenv.problems import load_suite
from cudaenv.problems.model import SourceFile
from cudaenv.redteam.catalog_exhaust import CUB_REDUCE, THRUST_REDUCE
from tests.conftest import write_problem


def _violations(source: str, forbidden: list[str], path: str = "solution.cu") -> list[str]:
    return analyse([SourceFile(path=path, content=source)], None, forbidden=forbidden).violations


@pytest.mark.parametrize(
    ("source", "entry"),
    [
        (CUB_REDUCE, "cub::"),
        (THRUST_REDUCE, "thrust::"),  # `using namespace thrust;` then bare calls
        ('#include "x.h"\n#include <thrust/sort.h>\nint f();\n', "<thrust/"),
        ("#include <cublas_v2.h>\nvoid f(cublasHandle_t h) { cublasCreate(&h); }\n", "cublas"),
        ("void f(int* a, int n) { std::sort(a, a + n); }\n", "std::sort"),
        ("void f(int* a, int n) { qsort(a, n, 4, 0); }\n", "qsort"),
    ],
)
def test_forbidden_uses_are_found(source: str, entry: str) -> None:
    found = _violations(source, ["libraries", "std::sort", "qsort"])
    assert any(f"uses {entry}" in v and "forbids" in v for v in found), found


def test_comments_strings_and_lookalikes_are_not_uses() -> None:
    source = """\
#include "reduce_sum.h"
#include <cooperative_groups.h>
// thrust::reduce would be simpler; cub::DeviceReduce too
static const char* note = "cublasSgemm <thrust/reduce.h>";
__global__ void k(float* cubic, int cub, int npp_per_block) { cubic[0] = cub + npp_per_block; }
"""
    assert _violations(source, ["libraries", "std::sort"]) == []


def test_python_modules_and_names() -> None:
    source = "import numpy as np\nfrom numba import cuda\n\ndef f(a):\n    return np.sort(a)\n"
    assert _violations(source, ["numpy.sort"], "solution.py")  # through the alias np
    assert _violations(source, ["numba.cuda"], "solution.py")  # from numba import cuda
    assert _violations(source, ["numpy.argsort", "numba.cuda.jit"], "solution.py") == []
    assert _violations("x = 'numpy.sort'  # numpy.sort\n", ["numpy.sort"], "solution.py") == []


def test_every_bundled_kernel_problem_forbids_libraries() -> None:
    kernels = [p for p in load_suite("builtin") if p.group == "cuda-kernels"]
    assert kernels and all("libraries" in p.forbidden_references for p in kernels)


def test_a_library_solution_is_rejected_before_the_build(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = load_suite("builtin")["reduce-sum"]
    v = cudaenv.grade(problem, {"solution.cu": CUB_REDUCE})
    assert v.passed is False and v.compiled is False
    assert v.stages["static"].status == "failed" and "build" not in v.stages
    assert "forbids" in v.reason and any("cub::" in s for s in v.suspected_hack)
    # the reference of the same problem is clean
    ref = cudaenv.grade(problem, problem.solution)
    assert ref.stages["static"].status == "ok" and ref.compiled is True


def test_a_baseline_may_use_what_solutions_may_not(tmp_path: Path) -> None:
    """Baselines are graded with check_references=False: a naive baseline built on a library
    is fine, the rule binds the policy's solutions."""
    lib = '#include <thrust/version.h>\n#include "add.h"\nint add(int a, int b) { return a + b; }\n'
    root = write_problem(
        tmp_path,
        "cpu-forbid",
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "metadata": {"requires_gpu": False, "forbidden_references": ["<thrust/"]},
        },
        files={
            "context/include/add.h": "int add(int a, int b);\n",
            "test/test_main.cpp": "int main() { return 0; }\n",
            "solution/solution.cpp": '#include "add.h"\nint add(int a, int b) { return a + b; }\n',
        },
    )
    problem = load_suite(root)["cpu-forbid"]
    as_solution = cudaenv.grade(problem, {"solution.cpp": lib})
    assert as_solution.stages["static"].status == "failed"
    as_baseline = cudaenv.grade(problem, {"solution.cpp": lib}, check_references=False)
    assert as_baseline.stages["static"].status == "ok"


def test_a_malformed_entry_is_a_spec_error(tmp_path: Path) -> None:
    root = write_problem(
        tmp_path,
        "bad-forbid",
        spec={"metadata": {"forbidden_references": "libraries"}},
        files={"solution/solution.cu": "int x;\n"},
    )
    with pytest.raises(SpecError, match="forbidden_references"):
        load_suite(root)


def test_python_problems_forbid_host_numpy_for_the_work(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = load_suite("builtin")["py-vector-add"]
    host = "import numpy as np\n\n\ndef vector_add(a, b, out):\n    out[:] = np.add(a, b)\n"
    v = cudaenv.grade(problem, {"solution.py": host})
    assert v.passed is False and "numpy.add" in v.reason, v.reason
    python = [p for p in load_suite("builtin") if p.group == "cuda-python"]
    assert all(p.forbidden_references for p in python)


def test_every_prompt_that_rules_out_libraries_says_so_in_metadata() -> None:
    """A guard for new problems: a prompt forbidding Thrust/CUB/libraries gets the rule."""
    import re

    rule = re.compile(r"(?is)(\bno\b|not use)[^.]*\b(thrust|cub|libraries)\b")
    for p in load_suite("builtin"):
        if rule.search(p.prompt):
            assert "libraries" in p.forbidden_references, p.task_id


def test_host_clocks_are_refused_where_the_prompt_says_time_on_the_gpu() -> None:
    problem = load_suite("builtin")["events-timing"]
    source = "#include <chrono>\nfloat t() { auto a = std::chrono::steady_clock::now(); }\n"
    report = analyse(
        [SourceFile(path="solution.cu", content=source)],
        None,
        forbidden=problem.forbidden_references,
    )
    assert any("std::chrono" in v for v in report.violations)
