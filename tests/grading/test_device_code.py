"""Device-code rules (cudaenv.grading.device_code) on PTX the real nvcc kept: reduced precision
where the problem fixes fp32/fp64, library kernels where libraries are forbidden."""

from __future__ import annotations

import shutil

import pytest

from cudaenv.grading.device_code import fixed_precision, ptx_violations
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.grading.test_static_cpp import (
    NVCC,
    _own_cache,  # noqa: F401  (its autouse fixture)
    run_check,
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
SUITE = load_suite("builtin")

HALF = """#include <cuda_fp16.h>
__global__ void axpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __half2float(__hfma(__float2half(a), __float2half(x[i]), __float2half(y[i])));
}
"""
FULL = """__global__ void axpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
"""
TF32 = """__global__ void round_tf32(float* x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x[threadIdx.x]));
    x[threadIdx.x] = __uint_as_float(r);
}
"""
DOWNCAST = """__global__ void scale(double* x, int n) {
    int i = threadIdx.x;
    if (i < n) x[i] = (double)((float)x[i] * 2.0f);
}
"""


def _problem(**metadata) -> Problem:
    return Problem.model_validate(
        {
            "task_id": "t",
            "prompt": "p",
            "type": "cuda_cpp",
            "group": "g",
            "test_command": "./t",
            "metadata": metadata,
        }
    )


def test_the_precision_comes_from_the_declared_work_or_the_metadata() -> None:
    assert fixed_precision(SUITE["sgemm-tiled"]) == "fp32"
    assert fixed_precision(SUITE["scan-inclusive"]) is None  # int32 work
    assert fixed_precision(SUITE["device-query"]) is None  # no benchmark, no work
    fp32_work = {"work": {"flops": 10, "bytes": 8, "dtype": "fp32"}}
    assert fixed_precision(_problem(**fp32_work, precision="any")) is None
    assert fixed_precision(_problem(precision="fp64")) == "fp64"
    assert fixed_precision(_problem(work={"flops": 10, "bytes": 8, "dtype": "fp16"})) is None
    with pytest.raises(ValueError, match="precision must be one of"):
        _problem(precision="fp23")


@needs_nvcc
@pytest.mark.parametrize(("src", "precision", "kind"), [(HALF, "fp32", ".f16"),
                         (TF32, "fp32", ".tf32")])  # fmt: skip
def test_narrower_arithmetic_fails_where_the_problem_fixes_the_precision(
    src: str, precision: str, kind: str
) -> None:
    files, build = {"solution.cu": src}, NVCC + " -arch=sm_80"  # tf32 needs sm_80
    _, violations, _ = run_check(build, files, precision=precision)
    assert any(kind in v and "reduced precision" in v for v in violations), violations
    assert run_check(build, files, precision=None)[1] == []  # the rule off: nothing else trips


@needs_nvcc
def test_full_precision_device_code_passes() -> None:
    assert run_check(NVCC, {"solution.cu": FULL}, precision="fp32")[1] == []
    assert run_check(NVCC, {"solution.cu": DOWNCAST}, precision="fp32")[1] == []


@needs_nvcc
def test_a_library_kernel_in_the_device_code_fails_where_libraries_are_forbidden() -> None:
    src = (
        "#include <cub/block/block_reduce.cuh>\nnamespace lib = cub;\n"
        "__global__ void k(const float* x, float* out) {\n"
        "    using R = lib::BlockReduce<float, 128>;\n"
        "    __shared__ typename R::TempStorage t;\n"
        "    float s = R(t).Sum(x[threadIdx.x]);\n"
        "    if (threadIdx.x == 0) *out = s;\n}\n"
    )
    lines = [".visible .entry _Z1kPKfPf(", ".func _ZN3cub6detail8WarpSumEf("]
    assert ptx_violations("s.cu", lines, precision=None, libraries=True)
    assert ptx_violations("s.cu", lines[:1], precision=None, libraries=True) == []
    assert ptx_violations("s.cu", lines, precision=None, libraries=False) == []
    _, violations, _ = run_check(NVCC, {"solution.cu": src}, ["libraries"])
    assert violations  # the header rule already names cub; the PTX rule is the second net


@needs_nvcc
def test_the_half_sgemm_exploit_is_stopped_only_by_the_precision_rule(monkeypatch) -> None:
    """The red team's ``precision-half-sgemm`` through the real grader: a suspected hack with the
    rule; with it off, the toolchain stage passes it on (a GPU would then time it)."""
    import cudaenv.grading.static_cpp as static_cpp
    from cudaenv import grade
    from cudaenv.redteam.catalog_device import HALF_SGEMM

    files = {"solution.cu": HALF_SGEMM}
    v = grade(SUITE["sgemm-tiled"], files, mode="optimize", build_cache=False)
    assert v.passed is False and any("reduced precision" in s for s in v.suspected_hack), v
    monkeypatch.setattr(static_cpp, "fixed_precision", lambda problem: None)
    v = grade(SUITE["sgemm-tiled"], files, mode="optimize", build_cache=False)
    assert v.stages["toolchain"].status == "ok" and v.suspected_hack == [], v


def test_a_python_solution_of_an_fp32_problem_may_not_name_half_types() -> None:
    """py-vector-add's work is fp32: ``from numba import float16`` (any alias) is refused
    by the static stage, before anything runs."""
    from cudaenv import grade

    problem = SUITE["py-vector-add"]
    assert fixed_precision(problem) == "fp32"
    ref = problem.solution.files[0].content
    sneaky = "from numba import float16 as _h\n" + ref
    v = grade(problem, {"solution.py": sneaky}, build_cache=False)
    assert v.passed is False and any("numba.float16" in s for s in v.suspected_hack), v
    assert "static" in v.stages and v.stages["static"].status == "failed"


def _script_ptx(tmp_path, ptx: str) -> list[str]:
    """Run the toolchain script on a unit whose kept outputs are ``ptx`` and a real (empty)
    object, as the build's ``nvcc -keep`` leaves them; the PTX lines its report keeps."""
    import subprocess

    from cudaenv.grading.static_cpp_plan import plan
    from cudaenv.grading.static_cpp_script import parse_report, script

    (tmp_path / "solution.c").write_text("int unused;\n")
    subprocess.run(["gcc", "-c", "solution.c", "-o", "solution.o"], cwd=tmp_path, check=True)
    (tmp_path / "solution.cpp4.ii").write_text('# 1 "solution.cu"\nint unused;\n')
    (tmp_path / "solution.ptx").write_text(ptx)
    text = script(plan("nvcc -o test.out solution.cu"), [("solution.cu", False)], "r.txt", True)
    env = {"PATH": "/usr/bin:/bin", "CUDAENV_OWN": "solution.cu", "PWD": str(tmp_path)}
    subprocess.run(["bash", "-c", text], cwd=tmp_path, env=env, check=True)
    (unit,) = parse_report((tmp_path / "r.txt").read_text())
    return unit.ptx


def test_an_fp16_kernel_after_500_empty_ones_is_still_read(tmp_path) -> None:
    # issue 27: the report kept the first 400 filtered lines, and 500 empty kernel
    # instantiations came first; the fp16 instruction after them was never read
    empties = "".join(f".visible .entry _Z5emptyILi{i}EEvv()\n{{\n\tret;\n}}\n" for i in range(500))
    ptx = empties + ".visible .entry _Z4halfPf(\n)\n{\n\tfma.rn.f16 %rs1, %rs2, %rs3, %rs4;\n}\n"
    lines = _script_ptx(tmp_path, ptx)
    violations = ptx_violations("solution.cu", lines, precision="fp32", libraries=False)
    assert any(".f16" in v and "narrower than the fp32" in v for v in violations)
    # and the report holds the lines that matter, not the 500 declarations
    assert len(lines) < 10


def test_a_library_kernel_after_many_others_is_still_read(tmp_path) -> None:
    others = "".join(f".visible .entry _Z5emptyILi{i}EEvv()\n{{\n}}\n" for i in range(500))
    ptx = others + ".visible .entry _ZN3cub6detail6kernelEv()\n{\n}\n"
    lines = _script_ptx(tmp_path, ptx)
    assert ptx_violations("solution.cu", lines, precision=None, libraries=True)
