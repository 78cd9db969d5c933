"""A library the problem needs and the toolchain lacks is infrastructure, naming it; a header
only the solution includes is the solution's failure. Real nvcc builds throughout; where a
real library must look absent, its wheel's file list is hidden (the decision under test is
the grader's, and the library is installed here)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cudaenv
from cudaenv import libraries, toolkit
from cudaenv.problems import Problem, load_suite
from tests.conftest import write_problem
from tests.grading.computeeval_fixtures import FIXTURES, write_pack

pytestmark = pytest.mark.skipif(toolkit.cuda_home() is None, reason="needs the CUDA toolkit (nvcc)")

ABSENT = "cudaenv_absent_library"
HEADER = "int twice(int x);\n"
TEST = """\
#include <cstdio>
#include "twice.h"
int main() { std::printf("%d\\n", twice(21)); return twice(21) == 42 ? 0 : 1; }
"""
SOLUTION = '#include "twice.h"\nint twice(int x) { return 2 * x; }\n'


def _problem(tmp_path: Path, *, header: str = HEADER, build: str | None = None) -> Problem:
    spec = {"build_command": build} if build else None
    d = write_problem(
        tmp_path,
        "gaps",
        spec=spec,
        files={"context/include/twice.h": header, "test/test_main.cu": TEST},
    )
    return load_suite(d)["gaps"]


def _grade(problem: Problem, solution: str) -> cudaenv.Verdict:
    return cudaenv.grade(problem, {"solution.cu": solution}, build_cache=False)


def test_a_header_the_problem_includes_and_nobody_installed_is_infrastructure(tmp_path) -> None:
    problem = _problem(tmp_path, header=f"#include <{ABSENT}.h>\n{HEADER}")
    v = _grade(problem, SOLUTION)
    assert v.failure == "infrastructure" and v.passed is None, v.reason
    assert f"{ABSENT}.h" in v.reason and "problem's own files include" in v.reason


def test_a_header_only_the_solution_includes_is_the_solutions_failure(tmp_path) -> None:
    problem = _problem(tmp_path)
    v = _grade(problem, f"#include <{ABSENT}.h>\n{SOLUTION}")
    assert v.failure == "agent" and v.passed is False, v.reason
    assert v.stages["build"].status == "failed"
    assert "No such file" in v.stages["build"].output_tail


def test_a_library_the_build_command_links_and_nobody_installed_is_infrastructure(
    tmp_path,
) -> None:
    build = f"nvcc -I include -o test.out solution.cu test/*.cu -l{ABSENT}"
    v = _grade(_problem(tmp_path, build=build), SOLUTION)
    assert v.failure == "infrastructure", v.reason
    assert f"-l{ABSENT}" in v.reason and "linker cannot find" in v.reason


def test_a_solution_that_prints_the_linkers_complaint_is_still_graded(tmp_path) -> None:
    """The complaint is checked by a probe build of our own: a solution cannot buy a masked
    (unscored) verdict by printing "cannot find -lcufft"."""
    pytest.importorskip("nvidia.cu13", reason="pip install 'cudaenv[mathlibs]'")
    if not libraries.installed(libraries.BY_LINK["cufft"], toolkit.cuda_home(), None):
        pytest.skip("cuFFT is not installed here (pip install 'cudaenv[mathlibs]')")
    build = "nvcc -I include -o test.out solution.cu test/*.cu -lcufft"
    forged = '#error "/usr/bin/ld: cannot find -lcufft: No such file or directory"\n'
    v = _grade(_problem(tmp_path, build=build), forged + SOLUTION)
    assert v.failure == "agent" and v.passed is False, v.reason


def _hide(monkeypatch, distribution: str) -> None:
    real = libraries._dist_files
    monkeypatch.setattr(
        libraries, "_dist_files", lambda name: () if name == distribution else real(name)
    )


def test_a_missing_library_wheel_is_infrastructure_naming_the_extra(tmp_path, monkeypatch) -> None:
    """Checked before any build, from the problem's -l flags: the reason names the library
    and the extra that installs it."""
    pack = write_pack(tmp_path / "p.tar.gz", [FIXTURES / "mathlibs-cufft-forward"])
    problem = load_suite(str(pack))["fixture-mathlibs-cufft-forward"]
    _hide(monkeypatch, "nvidia-cufft")
    if libraries.installed_in_toolkit(libraries.BY_LINK["cufft"], toolkit.cuda_home()):
        pytest.skip("this toolkit has its own cuFFT")
    v = cudaenv.grade(problem, problem.baseline_solution, build_cache=False)
    assert v.failure == "infrastructure" and v.passed is None
    assert (
        v.reason == "infrastructure: cuFFT is not installed here (pip install 'cudaenv[mathlibs]')"
    )
    assert "build" not in v.stages  # refused before building


def test_a_header_library_the_problem_includes_is_required_too(tmp_path, monkeypatch) -> None:
    """The cuDNN frontend has no -l flag: the problem's own #include names it."""
    _hide(monkeypatch, "nvidia-cudnn-frontend")
    problem = _problem(tmp_path, header=f"#include <cudnn_frontend.h>\n{HEADER}")
    v = _grade(problem, SOLUTION)
    assert v.failure == "infrastructure"
    assert "cudnn-frontend is not installed here (pip install 'cudaenv[cudnn]')" in v.reason


def test_a_solution_including_a_missing_librarys_header_is_its_own_failure(
    tmp_path, monkeypatch
) -> None:
    """A hidden library wanted only by the solution is not the machinery's business: no
    infrastructure verdict, the grade goes on (here the build still finds the real header)."""
    if not libraries.installed(libraries.BY_LINK["cufft"], toolkit.cuda_home(), None):
        pytest.skip("cuFFT is not installed here (pip install 'cudaenv[mathlibs]')")
    _hide(monkeypatch, "nvidia-cufft")
    v = _grade(_problem(tmp_path), "#include <cufft.h>\n" + SOLUTION)
    assert v.failure is None and v.compiled, v.reason
