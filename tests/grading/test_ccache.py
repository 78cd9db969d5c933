"""The compiler cache: nvcc builds split per source, the harness object reused across
solutions, the split binary equal in behaviour, and the cache out of the graded code's reach."""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading import ccache
from cudaenv.grading._nvcc_shim import plan
from cudaenv.problems import load_suite
from cudaenv.sandbox import Sandbox, make_sandbox
from tests.conftest import CPU_HEADER, CPU_TEST, write_problem
from tests.grading.local_box import LocalBox

needs_ccache = pytest.mark.skipif(
    ccache.ccache_binary() is None or ccache.real_nvcc() is None,
    reason="ccache or nvcc is not installed",
)


def test_plan_splits_a_compile_and_link_command() -> None:
    argv = ["-I", "include", "-O2", "-o", "test.out", "solution.cu", "test/a.cu", "-lcublas"]
    assert plan(argv) == (["-I", "include", "-O2"], ["solution.cu", "test/a.cu"], "test.out")
    assert plan(["-Iinc", "-std=c++17", "-arch=sm_90", "-o", "x", "a.cu", "b.o", "-L", "lib"]) == (
        ["-Iinc", "-std=c++17", "-arch=sm_90"],
        ["a.cu"],
        "x",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "a.cu", "-o", "a.o"],  # already a single compile: ccache's own business
        ["-rdc=true", "-o", "x", "a.cu", "b.cu"],  # device linking: not split
        ["-dc", "a.cu"],
        ["-o", "x", "a.cu", "--some-new-flag"],  # unknown option: leave nvcc alone
        ["-x", "cu", "-o", "x", "a.txt"],
        ["a.cu", "b.cu"],  # no -o
        ["-o", "x", "-o", "y", "a.cu"],
    ],
)
def test_plan_leaves_what_it_does_not_understand(argv: list[str]) -> None:
    assert plan(argv) is None


@pytest.mark.parametrize(
    ("command", "ok"),
    [
        ("nvcc -I include -O2 -o test.out solution.cu test/*.cu", True),
        ("nvcc -o t.out solution.cu test/*.cu -lcublas", True),
        ("nvcc -o t solution.cu && ./t", False),  # would run code where the cache is writable
        ("nvcc -o t solution.cu; sh x.sh", False),
        ("nvcc -o $(sh evil.sh) a.cu", False),
        ("make", False),
        ("bash build.sh", False),
        ("python -m py_compile solution.py", False),
        ("nvcc 'unbalanced", False),
    ],
)
def test_cache_only_for_compiler_only_builds(command: str, ok: bool) -> None:
    assert ccache.compiler_only(command) is ok


# Host-only code, so the split binary can run here: the harness calls the solution.
HARNESS_CU = CPU_TEST
SOLUTION_CU = '#include "add.h"\nint add(int a, int b) {{ return a + b + {zero}; }}\n'


@pytest.fixture
def nvcc_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    root = write_problem(
        tmp_path / "suite",
        "nvcc-add",
        spec={
            "build_command": "nvcc -I include -O1 -o test.out solution.cu test/*.cu",
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
        },
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cu": HARNESS_CU,
            "solution/solution.cu": SOLUTION_CU.format(zero=0),
        },
    )
    return load_suite(root.parent)["nvcc-add"]


@needs_ccache
def test_harness_object_is_reused_by_later_solutions(nvcc_problem) -> None:
    """First build of a problem: plain nvcc. From the second on: the harness goes through
    ccache (a miss, then hits); every build links a binary that passes."""
    seen = []
    for i in range(4):
        zero = f"{i} - {i}"  # a new solution each time: the build cache cannot answer
        v = cudaenv.grade(nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero=zero)})
        assert v.passed is True, v.stages["build"].output_tail or v.stages["test"].output_tail
        assert not v.stages["build"].cached
        seen.append(ccache.stats())
    assert seen[0] == {"direct_cache_hit": 0, "preprocessed_cache_hit": 0, "cache_miss": 0}
    assert seen[1]["cache_miss"] == 1  # the harness, stored
    assert seen[3]["direct_cache_hit"] == 2 and seen[3]["cache_miss"] == 1


@needs_ccache
def test_off_switch(nvcc_problem, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(3):
        v = cudaenv.grade(
            nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero=i - i)}, compiler_cache=False
        )
        assert v.passed is True
    assert ccache.stats()["cache_miss"] == 0


@needs_ccache
def test_graded_code_cannot_write_the_cache(nvcc_problem) -> None:
    """Exploit class "state kept between episodes": the compiler cache is writable in the build
    sandbox only; where graded code runs (the test sandbox) the path does not even exist, so
    nothing can plant an object for later gradings to link. (A solution that tried through
    the test harness is stopped earlier too: the static checks ban file access.)"""
    for i in range(2):  # the second build uses (and so creates) the cache
        cudaenv.grade(nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero=f"{i}*0")})
    root = ccache.cache_root()
    assert any(root.iterdir())
    target = root / "planted.o"
    write = f"echo planted > {target} && echo WROTE"
    cached = ccache.for_build(nvcc_problem.build_command, {}, [], host=True)
    assert cached is not None and cached.rw_binds == [str(root)]
    with make_sandbox("local") as box:
        res = box.exec(write, timeout=30)
        assert "WROTE" not in res.stdout and "No such file or directory" in res.stderr
        sibling = box.compile_sibling(rw_binds=cached.rw_binds, ro_binds=cached.ro_binds)
        assert sibling is not None
        with sibling:  # the compiler's sandbox: the one place it is writable
            assert "WROTE" in sibling.exec(write, timeout=30).stdout
        assert "WROTE" not in box.exec(f"cat {target} && echo WROTE", timeout=30).stdout
    with make_sandbox("local", isolation="rlimits") as box:  # no mount isolation: no sibling
        assert box.compile_sibling(rw_binds=cached.rw_binds, ro_binds=cached.ro_binds) is None


def test_image_toolchains_get_their_own_cache(tmp_path: Path, monkeypatch) -> None:
    """A build with an image's toolchain mounts a cache directory of its own (the image's
    ccache may differ from the host's) and the shim run by the image's python3; the command
    puts the shim first on the image's PATH."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    command = "nvcc -o t.out solution.cu test/*.cu"
    cached = ccache.for_build(command, {"A": "1"}, ["test/main.cu"], host=False)
    assert cached is not None
    assert cached.rw_binds == [str(ccache.container_cache_root())]
    assert cached.rw_binds != [str(ccache.cache_root())]
    shim = cached.ro_binds[0]
    assert (Path(shim) / "nvcc").read_text().startswith("#!/usr/bin/env python3\n")
    assert cached.command.startswith(f"PATH={shim}:") and cached.command.endswith(command)
    assert cached.env["A"] == "1" and cached.env["CUDAENV_NVCC_CACHED"] == "test/main.cu"


@pytest.mark.parametrize("host", [True, False])
def test_off_switch_covers_every_toolchain(monkeypatch: pytest.MonkeyPatch, host: bool) -> None:
    monkeypatch.setenv("CUDAENV_CCACHE", "0")
    assert ccache.for_build("nvcc -o t a.cu", {}, [], host=host) is None


class SiblingAsked(LocalBox):
    """A grading sandbox that records each ``compile_sibling`` request and answers it with
    ``sibling()`` (a real sandbox, or None)."""

    requests: list[tuple[list[str], list[str]]] = []

    def sibling(self) -> Sandbox | None:
        return None

    def compile_sibling(self, *, rw_binds: list[str], ro_binds: list[str]) -> Sandbox | None:
        self.requests.append((rw_binds, ro_binds))
        return self.sibling()


@needs_ccache
def test_the_build_asks_the_grading_sandbox_for_a_sibling(nvcc_problem, monkeypatch) -> None:
    """From a problem's second build on, the grader asks the grading sandbox for a compile-only
    sibling with the cache writable and the shim read-only, builds there (through ccache) and
    moves the outputs over; ``compiler_cache=False`` never asks. (The sibling here is an
    rlimits sandbox, which sees the host's paths: the binds are checked, not enforced.)"""
    requests: list[tuple[list[str], list[str]]] = []
    monkeypatch.setattr(SiblingAsked, "requests", requests)
    monkeypatch.setattr(SiblingAsked, "sibling", lambda self: make_sandbox(isolation="rlimits"))
    for i in range(3):
        v = cudaenv.grade(
            nvcc_problem,
            {"solution.cu": SOLUTION_CU.format(zero=f"{i} - {i}")},
            sandbox=SiblingAsked,
        )
        assert v.passed is True, v.stages["build"].output_tail or v.stages["test"].output_tail
    assert requests == [([str(ccache.cache_root())], [str(ccache.shim_dir())])] * 2
    assert ccache.stats() == {"direct_cache_hit": 1, "preprocessed_cache_hit": 0, "cache_miss": 1}
    v = cudaenv.grade(
        nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero="9 - 9")}, compiler_cache=False
    )
    assert v.passed is True and len(requests) == 2


@needs_ccache
def test_no_sibling_builds_plainly(nvcc_problem, monkeypatch) -> None:
    """A sandbox that cannot make a sibling (``compile_sibling`` returns None) builds in
    itself, without the cache."""
    requests: list[tuple[list[str], list[str]]] = []
    monkeypatch.setattr(SiblingAsked, "requests", requests)
    for i in range(3):
        v = cudaenv.grade(
            nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero=f"{i} * 0")}, sandbox=SiblingAsked
        )
        assert v.passed is True, v.stages["build"].output_tail
    assert len(requests) == 2
    assert ccache.stats() == {"direct_cache_hit": 0, "preprocessed_cache_hit": 0, "cache_miss": 0}


@needs_ccache
def test_split_build_errors_read_like_nvcc(nvcc_problem) -> None:
    for i in range(2):
        cudaenv.grade(nvcc_problem, {"solution.cu": SOLUTION_CU.format(zero=f"{i}*1-{i}")})
    v = cudaenv.grade(nvcc_problem, {"solution.cu": "int add(int a, int b) { return a + ; }"})
    build = v.stages["build"]
    assert v.compiled is False and build.status == "failed"
    assert "solution.cu" in build.output_tail and "error" in build.output_tail


@needs_ccache
def test_bundled_cuda_problem_builds_through_the_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = load_suite("builtin")["atomic-minmax"]
    ref = {f.path: f.content for f in problem.solution.files}
    for i in range(3):
        files = {
            path: text + f"\nstatic int cudaenv_variant_{i} = {i};\n" for path, text in ref.items()
        }
        v = cudaenv.grade(problem, files)
        assert v.compiled is True, v.stages["build"].output_tail
    assert ccache.stats() == {"direct_cache_hit": 1, "preprocessed_cache_hit": 0, "cache_miss": 1}
