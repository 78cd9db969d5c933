"""The undefined-symbol allow-list (cudaenv.grading.symbol_allowlist), on objects the real g++
and nvcc compiled: a name nobody put on the deny-list still fails unless a solution may call it.
"""

from __future__ import annotations

import shutil

import pytest

from cudaenv.grading.symbol_allowlist import (
    SymbolAllowlist,
    allowlist_for,
    linked_libraries,
    source_names,
)
from cudaenv.problems.model import SourceFile
from tests.grading.test_static_cpp import (
    GXX,
    NVCC,
    _own_cache,  # noqa: F401  (its autouse fixture)
    run_check,
)

ADD_H = "int add(int a, int b);\n"
# the token survives unsetenv in the stack's string area; __libc_stack_end is on no deny-list
STACK_WALK = """#include "add.h"
#include <cstring>
extern "C" void* __libc_stack_end;
int add(int a, int b) {
    char** argv = (char**)__libc_stack_end + 1;
    const char* p = argv[0];
    while (std::strncmp(p, "CUDA" "ENV_COMPLETION_TOKEN=", 25) != 0) ++p;
    return a - b + (int)p[25];
}
"""


def _allow(build: str = GXX, headers: dict[str, str] | None = None, extra=()) -> SymbolAllowlist:
    files = [
        SourceFile(path=p, content=c) for p, c in (headers or {"include/add.h": ADD_H}).items()
    ]
    return allowlist_for(build, files, extra)


def test_mangled_names_give_their_source_identifiers() -> None:
    assert source_names("_Z18launch_busy_kernelxP11CUstream_st") == ["launch_busy_kernel"]
    assert source_names("_ZN2ns3runEv") == ["ns", "run"]
    assert source_names("_ZNK2ns1S3getEv") == ["ns", "S", "get"]
    assert source_names("getenv") == ["getenv"]
    assert source_names("_ZN2ns") == []  # malformed: no name, nothing allowed by it


def test_linked_libraries_come_from_the_build_command() -> None:
    assert linked_libraries("nvcc -o t s.cu -lcublas -l cufft") == ("cublas", "cufft")
    assert linked_libraries("g++ -o t s.cpp -lm -lpthread") == ()
    assert linked_libraries(None) == ()
    # NVRTC, the driver API and cuDNN (ComputeEval's runtime and cudnn groups link them)
    libs = linked_libraries("nvcc -o t s.cu -lnvrtc -lcuda -lcudnn")
    assert libs == ("cu", "cudnn", "nvrtc")
    allow = allowlist_for("nvcc -o t s.cu -lnvrtc -lcuda", [])
    assert allow.allows("cuLaunchKernel") and allow.allows("nvrtcCompileProgram")
    assert not allowlist_for("nvcc -o t s.cu", []).allows("cuLaunchKernel")


def test_the_cpp_abi_runtime_is_allowed() -> None:
    """A dynamic_cast (cuDNN frontend's graph nodes use them) compiles to __dynamic_cast."""
    allow = allowlist_for("nvcc -o t s.cpp", [])
    assert allow.allows("__dynamic_cast") and allow.allows("__cxa_throw")
    assert not allow.allows("__dynamic_cast_evil")


def test_a_symbol_on_no_deny_list_fails_the_allow_list() -> None:
    files = {"solution.cpp": STACK_WALK, "include/add.h": ADD_H}
    _, denied_only, _ = run_check(GXX, files)
    assert denied_only == []  # what the deny-list alone let through
    _, violations, _ = run_check(GXX, files, allow=_allow())
    assert any("'__libc_stack_end', outside what a solution may call" in v for v in violations)


def test_an_honest_cpp_solution_uses_the_runtimes_it_needs() -> None:
    src = """#include "add.h"
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>
int add(int a, int b) {
    std::vector<double> v{double(a), double(b)};
    std::map<std::string, double> m{{"x", std::sqrt(v[0] * v[0])}};
    if (v.size() != 2) throw std::runtime_error("size " + std::to_string(v.size()));
    std::printf("%s\\n", std::to_string(m.size()).c_str());
    return (int)std::lround(std::copysign(m["x"], v[0])) + b;
}
"""
    assert run_check(GXX, {"solution.cpp": src, "include/add.h": ADD_H}, allow=_allow())[1] == []


def test_what_the_problem_declares_links_or_lists_is_allowed() -> None:
    src = (
        '#include "add.h"\nint twice(int);\nextern "C" int mprotect(void*, unsigned long, int);\n'
        "int add(int a, int b) { return twice(a) - a + b + mprotect(nullptr, 0, 0); }\n"
    )
    files = {"solution.cpp": src, "include/add.h": ADD_H}
    _, violations, _ = run_check(GXX, files, allow=_allow())
    assert sorted(v.split("'")[1] for v in violations) == ["_Z5twicei", "mprotect"]
    header = {"include/add.h": ADD_H + "int twice(int x);  // defined by the harness\n"}
    _, violations, _ = run_check(GXX, files, allow=_allow(headers=header, extra=["mprotect"]))
    assert violations == []


def test_one_solution_source_may_call_what_another_defines() -> None:
    files = {
        "solution.cpp": '#include "add.h"\nint helper(int, int);\n'
        "int add(int a, int b) { return helper(a, b); }\n",
        "solution_helper.cpp": "int helper(int a, int b) { return a + b; }\n",
        "include/add.h": ADD_H,
    }
    assert run_check(GXX, files, allow=_allow())[1] == []
    alone = {k: v for k, v in files.items() if k != "solution_helper.cpp"}
    assert any("'_Z6helperii'" in v for v in run_check(GXX, alone, allow=_allow())[1])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_runtime_and_linked_libraries_but_not_the_driver_escape() -> None:
    src = """#include <cuda_runtime.h>
#include <cublas_v2.h>
__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
void run(float* x, cublasHandle_t h) {
    k<<<1, 32>>>(x);
    float r = 0.0f;
    cublasSasum(h, 32, x, 1, &r);
    cudaDeviceSynchronize();
}
"""
    files = {"solution.cu": src}
    with_lib = NVCC + " -lcublas"
    assert run_check(with_lib, files, allow=_allow(with_lib, headers={}))[1] == []
    _, violations, _ = run_check(NVCC, files, allow=_allow(NVCC, headers={}))
    assert [v.split("'")[1] for v in violations] == ["cublasSasum_v2"]
    escape = src.replace(
        "cudaDeviceSynchronize();",
        "void* f; cudaDriverEntryPointQueryResult q;\n"
        '    cudaGetDriverEntryPoint("cuMemAlloc", &f, cudaEnableDefault, &q);',
    )
    _, violations, _ = run_check(with_lib, {"solution.cu": escape}, allow=_allow(with_lib, {}))
    assert any("'cudaGetDriverEntryPoint" in v for v in violations), violations


def test_the_stack_token_exploit_scores_nothing_with_or_without_the_allow_list(monkeypatch) -> None:
    """The red team's ``toolchain-stack-token`` through the real grader: a suspected hack with
    the allow-list on; with it off the exploit still scores 0, because ``cpu-add`` is a split
    harness now (no completion token exists to steal: the checker decides on the outputs)."""
    import cudaenv.grading.static_cpp as static_cpp
    from cudaenv import grade
    from cudaenv.redteam.catalog_toolchain import STACK_TOKEN
    from cudaenv.redteam.fixtures import fixture_suite

    problem = fixture_suite().problem("cpu-add")
    files = [SourceFile(path="solution.cpp", content=STACK_TOKEN)]
    v = grade(problem, files, build_cache=False)
    assert v.passed is False and any("__libc_stack_end" in s for s in v.suspected_hack), v
    monkeypatch.setattr(static_cpp, "allowlist_for", lambda *a, **k: None)
    v = grade(problem, files, build_cache=False)
    assert v.passed is False and v.suspected_hack == [], v.model_dump_json(indent=1)
    assert v.stages["test"].status == "failed", v.stages["test"]
