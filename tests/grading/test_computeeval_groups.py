"""One small original problem per ComputeEval group that needs more than the CUDA runtime (a
cuFFT plan, a cuRAND generator, a cuSPARSE SpMV, a cuSOLVER Cholesky solve, a cuDNN frontend
graph, NVRTC with the driver API, a cuTile kernel), loaded from a ComputeEval problems datapack
the way its releases load. Each builds and links for real with nvcc against the toolkit and
the library wheels (the `mathlibs`, `cudnn` and `cublas` extras); without a GPU the known-good
solution grades "compiled; GPU stages skipped" and an empty one fails.
"""

from __future__ import annotations

import shlex

import pytest

import cudaenv
from cudaenv import libraries, toolkit
from cudaenv.grading.build import grading_env, prepare
from cudaenv.grading.workspace import assemble
from cudaenv.problems import Problem, load_suite
from cudaenv.sandbox.local import LocalSandbox
from tests.grading.computeeval_fixtures import task_dirs, write_pack

pytestmark = pytest.mark.skipif(toolkit.cuda_home() is None, reason="needs the CUDA toolkit (nvcc)")

#: task id -> (the libraries its build needs, the sonames its test binary must record)
CPP = {
    "fixture-mathlibs-cufft-forward": (["cuFFT"], ["libcufft.so.12"]),
    "fixture-mathlibs-curand-uniform": (["cuRAND"], ["libcurand.so.10"]),
    "fixture-mathlibs-cusparse-spmv": (["cuSPARSE"], ["libcusparse.so.12"]),
    "fixture-mathlibs-cusolver-cholesky": (["cuSOLVER"], ["libcusolver.so.12"]),
    "fixture-cudnn-frontend-relu": (
        ["cuDNN", "cudnn-frontend"],
        ["libcudnn.so.9", "libnvrtc.so.13"],
    ),
    "fixture-runtime-nvrtc-driver": (["NVRTC"], ["libnvrtc.so.13", "libcuda.so.1"]),
}
CUTILE = "fixture-cutile-vector-add"
#: fixtures whose known-good solution the static rules still refuse (the `cepolicy` half of
#: issue 28); strict, so the day the rules are fixed these marks must go
BLOCKED_BY_RULES: dict[str, str] = {}  # known-good fixtures a rule still refuses (none now)


def _skip_without(names: list[str]) -> None:
    by_name = {lib.name: lib for lib in libraries.LIBRARIES}
    for name in names:
        lib = by_name[name]
        if not libraries.installed(lib, toolkit.cuda_home(), toolkit.stub_dir()):
            pytest.skip(f"{name} is not installed here ({lib.install_hint})")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Problem]:
    pack = write_pack(tmp_path_factory.mktemp("ce-fixtures") / "fixtures-problems.tar.gz")
    loaded = load_suite(str(pack))
    return {tid: loaded[tid] for tid in loaded.ids}


def test_every_fixture_loads_from_the_datapack_with_its_group(suite) -> None:
    assert sorted(suite) == sorted([*CPP, CUTILE])
    assert len(task_dirs()) == len(suite)
    groups = {p.group for p in suite.values()}
    assert groups == {"mathlibs", "cudnn", "cuda-runtime", "cutile"}
    assert all(p.baseline_solution is not None for p in suite.values())


def test_cutile_tests_need_a_gpu_and_numba_tests_do_not(suite) -> None:
    """cuTile and torch have no CPU simulator: the test stage is skipped without a GPU rather
    than run on numba-cuda's simulator and failed."""
    assert suite[CUTILE].needs_gpu
    numba_tests = [
        f.model_copy(update={"content": "from numba import cuda\n"})
        for f in suite[CUTILE].test_files
    ]
    numba = suite[CUTILE].model_copy(update={"test_files": numba_tests})
    assert not numba.needs_gpu


@pytest.mark.parametrize("task_id", sorted(CPP))
def test_the_known_good_solution_builds_and_links_against_the_wheels(suite, task_id) -> None:
    """The build command as the problem gives it, in a grading sandbox with the grader's
    environment: the binary exists and records each library's soname (linked, not stubbed
    out; -lcuda links through the driver stub, libcuda.so.1 comes from the driver at run time)."""
    needs, sonames = CPP[task_id]
    _skip_without(needs)
    problem = suite[task_id]
    files = assemble(problem, problem.baseline_solution).all
    with LocalSandbox(isolation="rlimits") as box:
        env = grading_env(problem, False, box)
        stage = prepare(box, problem, files, env, 300, None, compiler_cache=False)
        assert stage.status == "ok", stage.output_tail
        dynamic = box.exec("readelf -d test.out", timeout=60, env=env)
    assert dynamic.exit_code == 0, dynamic.stderr
    for soname in sonames:
        assert f"[{soname}]" in dynamic.stdout, dynamic.stdout


@pytest.mark.parametrize("task_id", sorted(set(CPP) - {"fixture-cudnn-frontend-relu"}))
def test_the_known_good_solution_grades_compiled_gpu_stages_not_run(
    suite, task_id, request
) -> None:
    _skip_without(CPP[task_id][0])
    if task_id in BLOCKED_BY_RULES:
        request.applymarker(pytest.mark.xfail(reason=BLOCKED_BY_RULES[task_id], strict=True))
    problem = suite[task_id]
    v = cudaenv.grade(problem, problem.baseline_solution, build_cache=False)
    assert v.compiled and v.passed is None and v.failure is None, v.reason
    assert not v.suspected_hack, v.suspected_hack
    assert v.stages["test"].status == "skipped" and v.stages["test"].reason == "no GPU"


def test_the_known_good_cutile_solution_passes_static_checks_and_is_not_run(suite) -> None:
    problem = suite[CUTILE]
    v = cudaenv.grade(problem, problem.baseline_solution, build_cache=False)
    assert v.passed is None and v.failure is None, v.reason
    assert v.stages["static"].status == "ok" and v.stages["test"].reason == "no GPU"


def test_the_cutile_solution_imports_without_a_gpu(suite) -> None:
    """Importing cuda.tile and defining a kernel needs no GPU (launching does)."""
    pytest.importorskip("cuda.tile", reason="pip install 'cudaenv[cutile]'")
    pytest.importorskip("torch", reason="pip install 'cudaenv[cutile]'")
    with LocalSandbox(isolation="rlimits") as box:
        for f in suite[CUTILE].baseline_solution.files:
            box.write_file(f.path, f.content)
        res = box.exec(
            "python -c " + shlex.quote("import solution; print(type(solution._add).__name__)"),
            timeout=120,
            env=toolkit.toolkit_env(),
        )
    assert res.exit_code == 0, res.stderr
    assert res.stdout.strip() == "kernel"


@pytest.mark.parametrize("task_id", sorted([*CPP, CUTILE]))
def test_an_empty_solution_fails(suite, task_id) -> None:
    if task_id in CPP:
        _skip_without(CPP[task_id][0])
    problem = suite[task_id]
    empty = {f.path: "" for f in problem.baseline_solution.files}
    v = cudaenv.grade(problem, empty, build_cache=False)
    assert v.passed is False and v.failure == "agent", v.reason


def test_an_empty_solution_fails_at_the_link_when_no_api_is_required(suite) -> None:
    """Without required API names the build itself refuses an empty solution: the test's
    call into it does not link."""
    problem = suite["fixture-mathlibs-cufft-forward"]
    _skip_without(["cuFFT"])
    empty = {"solution.cu": "// nothing here\n"}
    v = cudaenv.grade(problem, empty, build_cache=False, check_references=False)
    assert v.passed is False and v.failure == "agent"
    assert v.stages["build"].status == "failed"
    assert "undefined reference" in v.stages["build"].output_tail


@pytest.mark.gpu
@pytest.mark.skipif(not toolkit.has_gpu(), reason="no NVIDIA GPU visible (nvidia-smi found none)")
@pytest.mark.parametrize("task_id", sorted(set(CPP) - set(BLOCKED_BY_RULES)))
def test_the_known_good_solution_passes_on_a_gpu(suite, task_id) -> None:
    """The fixtures' own tests are right: on a GPU the known-good solution passes them."""
    _skip_without(CPP[task_id][0])
    problem = suite[task_id]
    v = cudaenv.grade(problem, problem.baseline_solution, build_cache=False)
    assert v.passed is True, v.reason
