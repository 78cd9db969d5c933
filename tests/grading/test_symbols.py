"""The object-symbol rules (cudaenv.grading.symbols) on objects the real g++ / nvcc compiled.

The spellings here all pass the text rules; only the object shows what they do. Each test
fails if its rule is removed.
"""

from __future__ import annotations

import shutil

import pytest

from cudaenv.grading.static_checks import analyse
from cudaenv.grading.symbol_allowlist import allowlist_for
from cudaenv.grading.symbols import (
    HEADER_CLASS_ALLOWANCES,
    ObjectReport,
    header_allowances,
    object_violations,
)
from cudaenv.problems.model import SourceFile
from tests.grading.test_static_cpp import (
    GXX,
    NVCC,
    _own_cache,  # noqa: F401  (its autouse fixture)
    run_check,
)


def _text_clean(src: str, forbidden: list[str] | None = None) -> bool:
    files = [SourceFile(path="solution.cpp", content=src)]
    return analyse(files, None, forbidden=forbidden or []).violations == []


def test_undefined_reference_to_a_forbidden_function_fails() -> None:
    # a C++ declaration `run` bound to `system` by an asm label: the object says `U system`
    src = (
        'int run(const char*) asm("system");\nint add(int a, int b) { return run("x") + a + b; }\n'
    )
    assert _text_clean(src)
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("references 'system' (process spawn)" in v for v in violations)


def test_library_symbol_fails_when_libraries_are_forbidden() -> None:
    src = (
        'int make(void**) asm("cublasCreate_v2");\n'
        "int add(int a, int b) { void* h; return make(&h) + a + b; }\n"
    )
    assert _text_clean(src, ["libraries"])
    _, violations, _ = run_check(GXX, {"solution.cpp": src}, ["libraries"])
    assert any("references 'cublasCreate_v2', a library" in v for v in violations)
    _, allowed, _ = run_check(GXX, {"solution.cpp": src})  # a cuBLAS problem: fine
    assert not any("a library" in v for v in allowed)


def test_a_definition_shadowing_libc_fails() -> None:
    src = (
        "#include <cstddef>\n"
        'extern "C" int memcmp(const void*, const void*, std::size_t) { return 0; }\n'
        "int add(int a, int b) { return a + b; }\n"
    )
    assert _text_clean(src)
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("defines 'memcmp', shadowing" in v for v in violations)


def test_a_static_object_with_a_constructor_fails() -> None:
    # the solution's own constructor runs before main: its code, judged by who wrote it
    src = (
        '#include <cstdio>\nstruct Banner { Banner() { std::puts("hi"); } };\n'
        "static Banner banner;\nint add(int a, int b) { return a + b; }\n"
    )
    assert _text_clean(src)
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("initialiser calls 'puts': writes output" in v for v in violations)
    # at -O0 the constructor is called, not inlined: the solution's own code before main
    _, called, _ = run_check(GXX.replace("-O1", "-O0"), {"solution.cpp": src})
    assert any("calls 'Banner::Banner()': the solution's own code" in v for v in called)


def test_a_constructor_attribute_the_text_rule_misses_fails() -> None:
    # `__constructor__` is the same attribute as `constructor`; the regex only knows the latter
    src = (
        "static int g;\n__attribute__((__constructor__)) static void early() { g = 1; }\n"
        "int add(int a, int b) { return a + b + g; }\n"
    )
    assert _text_clean(src)
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("did not generate" in v for v in violations)


def test_iostream_static_init_is_the_toolchains_own() -> None:
    src = "#include <iostream>\nint add(int a, int b) { return a + b; }\n"
    assert run_check(GXX, {"solution.cpp": src})[:2] == ("ok", [])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_registration_and_runtime_calls_are_allowed_the_solutions_kernel_is_not() -> None:
    kernel = "#include <iostream>\n__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
    kernel += "void launch(float* d) { k<<<1, 32>>>(d); }\n"
    assert run_check(NVCC, {"solution.cu": kernel})[:2] == ("ok", [])
    # a runtime call before main (a context made at namespace scope) is no exploit by itself
    ctor = kernel + "struct S { S() { cudaFree(0); } };\nstatic S s;\n"
    assert run_check(NVCC, {"solution.cu": ctor})[:2] == ("ok", [])
    # the solution's own kernel launched before main is its code running before main
    early = kernel + "struct E { E() { k<<<1, 32>>>(nullptr); } };\nstatic E e;\n"
    _, violations, _ = run_check(NVCC, {"solution.cu": early})
    assert any("the solution's own code (before main)" in v for v in violations)


def test_nvtx_headers_bring_their_own_loader() -> None:
    assert "getenv" in header_allowances(["/usr/local/cuda/include/nvtx3/nvToolsExt.h"])
    assert header_allowances(["/usr/include/stdio.h"]) == frozenset()


def test_cudnn_frontend_headers_bring_their_file_streams_and_the_solution_does_not() -> None:
    """cuDNN's frontend logs to a file and reads an errata JSON in inline code: the file-stream
    names its headers instantiate are not the solution's; the same names without those headers
    fail, and ``ifstream`` in the solution's own lines is still the text rule's."""
    is_open = "_ZNSt14basic_ifstreamIcSt11char_traitsIcEE7is_openEv"
    rep = ObjectReport(
        nm=[f"U {is_open}", "U getenv", "U cudaGetDriverEntryPointByVersion"],
        demangled={is_open: "std::ifstream"},
    )
    headers = ["/venv/include/cudnn_frontend_Errata.h", "/usr/include/c++/12/fstream"]

    def judged(hs: list[str]) -> list[str]:
        return object_violations(
            "solution.cpp",
            rep,
            libraries=False,
            allowed=header_allowances(hs),
            allowed_classes=header_allowances(hs, HEADER_CLASS_ALLOWANCES),
            allow=allowlist_for("nvcc -o t s.cpp -lcudnn", []),
        )

    assert judged(headers) == []
    without = judged(headers[1:])
    assert any("file access" in v for v in without) and any("getenv" in v for v in without)
    assert any("cudaGetDriverEntryPointByVersion" in v for v in without)
    assert not _text_clean(
        '#include <fstream>\nbool f() { std::ifstream s("x"); return s.is_open(); }\n'
    )


def test_a_tu_without_line_markers_is_known_by_its_include_lines() -> None:
    """nvcc keeps no preprocessed unit of a ``.cpp``: the headers a solution includes, and
    those the workspace's own headers include, stand in for the line markers."""
    from cudaenv.grading.static_cpp import _included

    files = [
        SourceFile(path="solution.cpp", content='#include "relu.h"\n#include <vector>\n'),
        SourceFile(path="include/relu.h", content="#pragma once\n#include <cudnn_frontend.h>\n"),
    ]
    headers = _included("solution.cpp", files)
    assert headers == ["/relu.h", "/vector", "/cudnn_frontend.h"]
    assert header_allowances(headers, HEADER_CLASS_ALLOWANCES) == {"file access"}
    assert header_allowances(_included("solution.cpp", files[:1]), HEADER_CLASS_ALLOWANCES) == set()


def test_an_include_that_steps_up_a_folder_is_followed_into_the_workspace() -> None:
    """``#include "../include/x.h"`` from the workspace root resolves through ``-I include``
    (nvcc tries include/../include/x.h): the header it names is the workspace's include/x.h,
    whose own includes (the cuDNN frontend here) count too."""
    from cudaenv.grading.static_cpp import _included

    files = [
        SourceFile(path="solution.cpp", content='#include "../include/block.h"\n'),
        SourceFile(path="include/block.h", content="#pragma once\n#include <cudnn_frontend.h>\n"),
    ]
    headers = _included("solution.cpp", files)
    assert headers == ["/../include/block.h", "/cudnn_frontend.h"]
    assert header_allowances(headers, HEADER_CLASS_ALLOWANCES) == {"file access"}
