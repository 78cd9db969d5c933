"""Seven split cuda-kernels problems end to end without a GPU (scan-inclusive, sgemm-tiled,
softmax-rows, spmv-csr, stencil-jacobi2d, transpose, warp-argmax): the runner, linked with the
reference, the baseline or a do-nothing solution, runs on the CPU emulator
(tests/families/cuemu) on inputs the checker drew, and the checker decides: the reference and
the baseline pass, the NOP fails, in the test stage (the cases the emulator runs in seconds)
and in the benchmark path (the checker's own perf case at a small size: warm-up, timed calls,
every timed output checked). The runners also build with nvcc and the problems' flags."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate
from tests.families.gate import compile_directly
from tests.grading.split_emulated import (
    SEED,
    build,
    check_module,
    run,
    small_perf,
    some_test_cases,
)
from tests.grading.split_harness import CheckerDir, decide_each, solutions

SUITE = load_suite("builtin")


@dataclass(frozen=True)
class Emulated:
    nop: str  # a solution that includes the header and does nothing
    names: str  # the test-stage cases the emulator runs (the largest are left to the GPU)
    perf: Callable[[ModuleType, np.random.Generator], object]  # a small perf case

    @property
    def cases(self) -> list[str]:
        return self.names.split()


ARGMAX_PATTERNS = ("random", "many-ties", "all-equal", "signed-zeros")
ARGMAX_PATTERNS += ("ascending", "descending", "extremes")


def _nop(header: str, signature: str) -> str:
    return f'#include "{header}"\n{signature} {{}}\n'


PROBLEMS = {
    "scan-inclusive": Emulated(
        _nop("scan.h", "void inclusive_scan(const int*, int*, int)"),
        "empty single random-2 random-31 random-32 random-33 random-255 random-256 random-257 "
        "random-1000 random-1023 random-1024 random-1025 random-2047 random-2048 random-2049 "
        "random-4095 random-4097 random-65535 random-65536 random-65537 large-values misaligned",
        lambda m, rng: m.perf_case(rng, 5000, 3),
    ),
    "sgemm-tiled": Emulated(
        _nop("sgemm.h", "void sgemm(int, int, int, const float*, const float*, float*)"),
        "1x1x1 1x1x2 2x3x1 3x5x7 16x16x16 17x33x5 64x64x64 65x63x3 129x250x77 1000x1x300 "
        "1x1000x300 5000x37x11 37x5000x11 300x200x500-ints",
        lambda m, rng: m.perf_case(rng, 67, 3),
    ),
    "softmax-rows": Emulated(
        _nop("softmax.h", "void softmax_rows(const float*, float*, int, int)"),
        "empty-0x5 uniform-1x1 uniform-1x7 uniform-3x5 uniform-2x32 uniform-5x33 "
        "uniform-64x1000 uniform-1000x64 uniform-17x4099 uniform-4x100003 uniform-4096x1 "
        "shifted-40x1537 wide-50x3001 masked-123x777 masked-3x5 one-hot-33x2500 "
        "constant-9x10007",
        lambda m, rng: m.perf_case(rng, 37, 300, 3),
    ),
    "spmv-csr": Emulated(
        _nop(
            "spmv_csr.h",
            "void spmv_csr(int, int, int, const int*, const int*, const float*, const float*, "
            "float*)",
        ),
        "no-rows 1x1 all-rows-empty single-column short-rows odd-row-count mixed-lengths "
        "one-dense-row long-rows-few-empty",
        lambda m, rng: m.perf_case(rng, 3000, 3),
    ),
    "stencil-jacobi2d": Emulated(
        _nop("jacobi2d.h", "void jacobi_step(const float*, float*, int, int)"),
        "0x0-steps1 0x5-steps1 5x0-steps1 1x1-steps2 7x1-steps2 1x7-steps2 2x5-steps2 "
        "5x2-steps2 3x3-steps3 4x5-steps4 17x33-steps5 33x17-steps5 1000x3-steps3 "
        "3x1000-steps3 257x129-steps20",
        lambda m, rng: m.perf_case(rng, 67, 45, 5),
    ),
    "transpose": Emulated(
        _nop("transpose.h", "void transpose(const float*, float*, int, int)"),
        "0x5 5x0 0x0 1x1 1x37 37x1 31x33 32x32 33x31 64x96 100x1000 1000x100 1023x1025 "
        "3x100003 100003x3 257x129-offset",
        lambda m, rng: m.perf_case(rng, 67, 45, 4),
    ),
    "warp-argmax": Emulated(
        _nop("segment_argmax.h", "void segment_argmax(const float*, int, float*, int*)"),
        " ".join(
            f"n{n}-{p}"
            for n in (0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4113, 65536)
            for p in ARGMAX_PATTERNS
        ),
        lambda m, rng: m.perf_case(rng, 32 * 500 + 7, 3),
    ),
}


def _solutions(problem: Problem) -> dict[str, dict[str, str]]:
    return solutions(problem, PROBLEMS[problem.task_id].nop)


def _decide(problem: Problem, root: Path, inputs: Path, decide, *, perf: bool) -> None:
    """Reference and baseline pass, the NOP fails: each run on ``inputs``, decided by ``decide``."""
    decide_each(problem, _solutions(problem), build, run, root, inputs, decide, perf=perf)


needs_emulator = pytest.mark.skipif(bool(emulate.available()), reason=str(emulate.available()))


@needs_emulator
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_reference_and_baseline_pass_and_the_nop_fails_emulated(
    task_id: str, tmp_path: Path
) -> None:
    problem = SUITE[task_id]
    inputs = some_test_cases(problem, tmp_path / "drawn", PROBLEMS[task_id].cases)
    box = CheckerDir(problem, tmp_path / "check")
    _decide(
        problem, tmp_path, inputs, lambda out: box.verify("test", SEED, inputs, out), perf=False
    )


@needs_emulator
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_the_benchmark_path_runs_and_every_timed_call_is_checked_emulated(
    task_id: str, tmp_path: Path
) -> None:
    problem = SUITE[task_id]
    module = check_module(problem, tmp_path / "module")
    case = PROBLEMS[task_id].perf(module, np.random.default_rng(7))
    inputs = small_perf(tmp_path / "perf-in", case)
    box = CheckerDir(problem, tmp_path / "check")
    _decide(problem, tmp_path, inputs, lambda out: box.verify("perf", SEED, inputs, out), perf=True)


@pytest.mark.slow  # nvcc: about 20 s a problem here
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_the_runner_builds_with_nvcc_with_the_reference_and_the_baseline(
    task_id: str, tmp_path: Path
) -> None:
    """One nvcc with the build command's flags: the runner links with either solution, and
    not without one."""
    compile_directly(SUITE[task_id], tmp_path)


BAD_LAUNCH = """#include "transpose.h"
__global__ void copy(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
void transpose(const float* in, float* out, int rows, int cols) {
    if (rows > 0 && cols > 0) copy<<<1, 2048>>>(in, out, rows * cols);  // over 1024 threads
}
"""


@needs_emulator
def test_a_launch_error_reaches_the_checker_as_the_cases_failure(tmp_path: Path) -> None:
    """The runner turns the solution's CUDA error into the case's error.txt and goes on; the
    checker fails the case with it (and the empty case, with nothing launched, passes)."""
    problem = SUITE["transpose"]
    inputs = some_test_cases(problem, tmp_path / "drawn", ["0x5", "31x33"])
    ran = run(
        build(problem, tmp_path / "bad", {"solution.cu": BAD_LAUNCH}), inputs, tmp_path / "io"
    )
    assert ran.rc == 0, ran.output
    report = CheckerDir(problem, tmp_path / "check").verify("test", SEED, inputs, ran.outputs)
    assert report["passed"] is False and len(report["failures"]) == 2, report
    assert report["failures"][0] == (
        "31x33: the runner reported an error: transpose: CUDA error invalid configuration argument"
    )
    assert report["failures"][1] == "31x33: out.npy is missing"
