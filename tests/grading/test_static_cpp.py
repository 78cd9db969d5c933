"""Checks on what the compiler sees (cudaenv.grading.static_cpp), with the real g++ and nvcc.

Each test names the rule it proves: removing that rule makes it fail.
"""

from __future__ import annotations

import os
import shutil

import pytest

from cudaenv.grading.grader import grade
from cudaenv.grading.static_checks import analyse
from cudaenv.grading.static_cpp import Plan, check, plan, splice
from cudaenv.grading.symbol_allowlist import SymbolAllowlist
from cudaenv.problems.model import Problem, SourceFile
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import need_image

GXX = "g++ -O1 -I include -o test.out solution.cpp test/*.cpp"
NVCC = "nvcc -I include -O2 -o test.out solution.cu test/*.cu"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))


def run_check(
    build: str,
    files: dict[str, str],
    forbidden: list[str] | None = None,
    allow: SymbolAllowlist | None = None,
    precision: str | None = None,
) -> tuple[str, list[str], bool]:
    """Write ``files`` into a real sandbox and run the toolchain check on those named solution*;
    ``allow``: the symbol allow-list (None: the deny-list alone); ``precision``: the one the
    device code must keep."""
    sources = [SourceFile(path=p, content=c) for p, c in files.items()]
    solution = [f for f in sources if f.path.startswith("solution")]
    with LocalSandbox(isolation="rlimits") as box:
        for f in sources:
            box.write_file(f.path, f.content)
        result = check(
            box,
            build,
            solution,
            sources,
            box.toolchain_env(),
            forbidden or [],
            timeout=120,
            allow=allow,
            precision=precision,
        )
        left = box.list_files()
    assert result is not None
    stage, violations = result
    assert not [p for p in left if p.startswith(".cudaenv-toolchain")]  # report removed
    return stage.status, violations, stage.cached


def test_splice_is_translation_phase_two() -> None:
    assert splice("get\\\nenv") == "getenv"
    assert splice("get\\  \r\nenv") == "getenv"  # GCC: blanks before the newline still splice
    assert splice("#inc??/\nlude") == "#include"
    assert splice('"a\\\\"\n') == '"a\\\\"\n'  # an escaped backslash at a line end is no splice


def test_text_checks_see_spliced_identifiers_and_directives() -> None:
    src = 'const char* t = get\\\nenv("X");\n#inc\\\nlude <cub/cub.cuh>\n'
    report = analyse([SourceFile(path="solution.cu", content=src)], None, forbidden=["libraries"])
    assert any("'getenv'" in v for v in report.violations)
    assert any("<cub/" in v for v in report.violations)


def test_plan_takes_the_builds_compiler_and_flags() -> None:
    got = plan("nvcc -I include -O2 -arch sm_80 -o test.out solution.cu test/*.cu -lcublas")
    assert got == Plan("nvcc", ("-I", "include", "-O2", "-arch", "sm_80"))
    assert plan("make all") == Plan("nvcc", ("-I", "include", "-I", "."), exact=False)
    assert plan(None) is None
    # an nvcc option whose value is the next word keeps it (the -c after it is not its value)
    diag = plan("nvcc -std=c++17 -I include -diag-suppress 2810 -o t solution.cpp -lcudnn")
    assert diag is not None and diag.flags[-2:] == ("-diag-suppress", "2810")
    werror = plan("g++ -Werror -o t solution.cpp")  # g++'s -Werror takes no value
    assert werror is not None and werror.flags == ("-Werror",)


def test_preprocessed_tokens_see_through_macros() -> None:
    # `NS(thrust)::f` never spells `thrust::` in the text; the expanded TU does
    src = (
        '#include "lib.h"\n#define NS(x) x\nint add(int a, int b) { return NS(thrust)::f(a, b); }\n'
    )
    files = {
        "solution.cpp": src,
        "include/lib.h": "namespace thrust { int f(int a, int b); }\n",
    }
    text = analyse([SourceFile(path="solution.cpp", content=src)], None, forbidden=["thrust::"])
    assert text.violations == []
    status, violations, _ = run_check(GXX, files, ["thrust::"])
    assert status == "failed"
    assert any("uses thrust::" in v and "[preprocessed]" in v for v in violations)


def test_asm_label_fails() -> None:
    src = 'extern "C" char* lookup(const char*) __asm__("getenv");\nint add(int a, int b) { return a + b; }\n'
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("asm label" in v for v in violations)


def test_an_asm_statement_is_not_a_label() -> None:
    src = (
        'int add(int a, int b) { asm volatile("" ::: "memory"); asm("nop");\n'
        '  if (a > b) asm("nop"); else asm("nop");\n  if (b) __asm__ __volatile__("nop");\n'
        "  return a + b; }\n"
    )
    status, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert (status, violations) == ("ok", [])


def test_redefine_extname_pragma_fails() -> None:
    src = (
        '_Pragma("redefine_extname lookup getenv")\n'
        'extern "C" char* lookup(const char*);\nint add(int a, int b) { return a + b; }\n'
    )
    _, violations, _ = run_check(GXX, {"solution.cpp": src})
    assert any("redefine_extname" in v for v in violations)


def test_namespace_alias_of_a_forbidden_namespace_fails() -> None:
    src = "namespace thrust { int f(); }\nnamespace th = ::thrust;\nint add(int a, int b) { return a + b; }\n"
    _, violations, _ = run_check(GXX, {"solution.cpp": src}, ["thrust::"])
    assert any("namespace alias of thrust::" in v for v in violations)


def test_headers_are_judged_where_the_compiler_resolved_them() -> None:
    # `<sub/../mylib/x.h>` does not start with `mylib/`, but the compiler opens include/mylib/x.h
    files = {
        "solution.cpp": "#include <sub/../mylib/x.h>\nint add(int a, int b) { return a + b; }\n",
        "include/sub/keep.h": "",
        "include/mylib/x.h": "inline int helper() { return 1; }\n",
    }
    text = analyse(
        [SourceFile(path="solution.cpp", content=files["solution.cpp"])],
        None,
        forbidden=["<mylib/"],
    )
    assert text.violations == []
    _, violations, _ = run_check(GXX, files, ["<mylib/"])
    assert any("include/mylib/x.h" in v and "<mylib/" in v for v in violations)


def test_an_honest_solution_passes_and_the_answer_is_cached() -> None:
    files = {
        "solution.cpp": '#include "add.h"\n#include <iostream>\nint add(int a, int b) { return a + b; }\n',
        "include/add.h": "int add(int a, int b);\n",
    }
    assert run_check(GXX, files) == ("ok", [], False)
    assert run_check(GXX, files) == ("ok", [], True)


def test_a_source_that_only_builds_with_the_harness_fails() -> None:
    # the check compiles the solution on its own; code the build's flags cannot compile is refused
    _, violations, _ = run_check(GXX, {"solution.cpp": "int add(int a, int b) { return a + ; }\n"})
    assert any("does not compile on its own" in v for v in violations)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_host_side_of_a_cu_is_checked() -> None:
    # nvcc -E shows only the device pass; the kept host TU shows what #ifndef __CUDA_ARCH__ hides
    src = (
        "#include <cstdlib>\n__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
        "#ifndef __CUDA_ARCH__\n#define NS(x) x\n"
        'const char* peek() { return NS(get)##env("X"); }\n#endif\n'
    ).replace("NS(get)##env", "NS(getenv)")
    _, violations, _ = run_check(NVCC, {"solution.cu": src})
    assert any("'getenv'" in v and "[preprocessed]" in v for v in violations)
    assert any("references 'getenv'" in v for v in violations)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_header_reached_through_dotdot_is_a_library() -> None:
    src = "#include <cuda/../cub/version.cuh>\n__global__ void k(float* x) { x[0] = 1.f; }\n"
    _, violations, _ = run_check(NVCC, {"solution.cu": src}, ["libraries"])
    assert any("cub/version.cuh" in v and "<cub/" in v for v in violations)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_builds_kept_outputs_are_what_is_checked_then_removed(tmp_path) -> None:
    # build_env makes nvcc keep its intermediates; the check reads the build's own object
    # (here swapped for one that calls system(), to show it is that file that is read)
    from cudaenv.grading.static_cpp import build_env

    src = "__global__ void k(float* x) { x[0] = 1.f; }\nint main() { k<<<1, 1>>>(nullptr); }\n"
    other = 'extern "C" int system(const char*);\nint peek() { return system("x"); }\n'
    build = "nvcc -O2 -o test.out solution.cu"
    solution = [SourceFile(path="solution.cu", content=src)]
    with LocalSandbox(isolation="rlimits") as box:
        box.write_file("solution.cu", src)
        box.write_file("other.cpp", other)
        env = build_env(build, box.toolchain_env())
        assert box.exec(build, timeout=300, env=env).exit_code == 0
        assert {"solution.o", "solution.cpp4.ii"} <= set(box.list_files())
        assert box.exec("g++ -c other.cpp -o solution.o", timeout=120, env=env).exit_code == 0
        result = check(box, build, solution, solution, env, [], timeout=120)
        left = set(box.list_files())
    assert result is not None
    assert any("references 'system'" in v for v in result[1])
    assert not {"solution.o", "solution.cpp4.ii", "solution.ptx"} & left
    assert {"test.out", "solution.cu", "other.cpp"} <= left


def test_build_env_keeps_only_for_a_plain_nvcc_build() -> None:
    assert "-keep" in build_env_of(NVCC)
    assert build_env_of(GXX) == ""
    assert build_env_of("make all") == ""


def build_env_of(build: str) -> str:
    from cudaenv.grading.static_cpp import build_env

    return build_env(build, {}).get("NVCC_APPEND_FLAGS", "")


def test_a_compiler_output_among_the_solution_files_fails() -> None:
    # a shipped solution.cpp4.ii / solution.o would stand in for what nvcc -keep writes
    files = {
        "solution.cpp": "int add(int a, int b) { return a + b; }\n",
        "solution.cpp4.ii": "int add(int a, int b) { return a + b; }\n",
    }
    _, violations, _ = run_check(GXX, files)
    assert violations == [
        "solution.cpp4.ii: a compiler output among the solution files (stands in for the build's)"
    ]


def test_kept_outputs_are_only_nvcc_keeps_files() -> None:
    from cudaenv.grading.static_cpp import kept_outputs

    paths = [
        "solution.cu", "solution.o", "solution.cpp4.ii", "solution.cpp1.ii", "solution.ptx",
        "solution.sm_75.cubin", "solution.cudafe1.stub.c", "test_dlink.reg.c", "test.out",
        "kernel.ptx", "lib.o", "test/test_main.cu",
    ]  # fmt: skip
    assert kept_outputs(paths) == {
        "solution.o", "solution.cpp4.ii", "solution.cpp1.ii", "solution.ptx",
        "solution.sm_75.cubin", "solution.cudafe1.stub.c", "test_dlink.reg.c",
    }  # fmt: skip
    assert kept_outputs(["kernel.ptx", "lib.o", "test.out"]) == set()


def test_an_exit_status_that_wraps_to_zero_is_a_success() -> None:
    # the parent sees the status's low byte: exit(256) and exit(-512) report success
    def exits(status: str) -> bool:
        src = f"#include <cstdlib>\nvoid f() {{ std::exit({status}); }}\n"
        found = analyse([SourceFile(path="solution.cpp", content=src)], None).violations
        return any("early exit with a success status" in v for v in found)

    assert [s for s in ("0", "256", "-512", "1024", "x", "0x100") if not exits(s)] == []
    assert [s for s in ("1", "-1", "255", "257", "EXIT_FAILURE") if exits(s)] == []


def test_a_build_that_compiles_nothing_has_no_toolchain_check() -> None:
    """A build made only of programs that compile nothing needs no compiler (issue 32)."""
    assert plan("true") is None
    assert plan("mkdir -p out && cp include/a.h out/ ; echo done") is None
    assert plan("X=1 true") is None
    assert plan("./build.sh") is not None  # a script might compile: guessed
    assert plan("true && nvcc -o t a.cu") is not None


@pytest.mark.docker
def test_grading_a_no_compile_build_needs_no_compiler_in_the_image() -> None:
    """The test image has no nvcc: a problem whose build is ``true`` still grades there."""
    image = os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest")
    need_image(image, "docker/build-test-image.sh")
    problem = Problem(
        task_id="no-compile",
        problem_type="cuda_cpp",
        group="cuda-kernels",
        prompt="Write solution.cu.",
        metadata={"requires_gpu": False},
        context_files=[SourceFile(path="include/t.h", content="#pragma once\n")],
        build_command="true",
        test_command="test -f solution.cu",
    )
    files = [SourceFile(path="solution.cu", content='#include "t.h"\nint f() { return 1; }\n')]
    verdict = grade(problem, files, sandbox="docker", sandbox_options={"image": image})
    assert verdict.passed is True, verdict.reason
    assert "toolchain" not in verdict.stages
